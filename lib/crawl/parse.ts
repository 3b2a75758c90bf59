import { Readability } from '@mozilla/readability'
import { parseHTML } from 'linkedom'

/** What a page's HTML says, as a snapshot keeps it. */
export interface ParsedPage {
  title: string
  metaDescription: string
  canonical: string
  robotsMeta: string
  h1: string
  /** The readable text (Readability), whitespace collapsed; the body's text when Readability finds no article. */
  mainText: string
  wordCount: number
  /** Paths of the same origin the page links to, without query or fragment, each once. */
  links: string[]
}

/** Longest title, description, canonical, robots and h1 values kept. */
const FIELD_CHARS = 1000
/** Most links kept from one page. */
const MAX_LINKS = 1000

const BLOCKS = 'p,div,li,dt,dd,h1,h2,h3,h4,h5,h6,article,section,header,footer,nav,main,aside,blockquote,pre,figcaption,td,th,br,a,button'

const clean = (text: string | null | undefined, max = FIELD_CHARS) => (text ?? '').replace(/\s+/g, ' ').trim().slice(0, max)

/** Words: whitespace-separated tokens holding a letter or a digit (a lone punctuation mark is none). */
export const countWords = (text: string) => (text.match(/\S*[\p{L}\p{N}]\S*/gu) ?? []).length

/** The path a link on `base` points to when it stays on `origin`, else null. */
export function internalPath(href: string, base: URL, origin: string): string | null {
  let url: URL
  try {
    url = new URL(href, base)
  } catch {
    return null
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin) return null
  return url.pathname
}

/** Title, meta tags, h1, links and main text of an HTML page fetched from `url`. */
export function parsePage(html: string, url: URL, origin: string): ParsedPage {
  const { document } = parseHTML(html)
  const meta = (name: string) => document.querySelector(`meta[name="${name}" i]`)?.getAttribute('content')
  const canonicalHref = document.querySelector('link[rel~="canonical" i]')?.getAttribute('href')
  let canonical = ''
  if (canonicalHref) {
    try {
      canonical = new URL(canonicalHref, url).href.slice(0, FIELD_CHARS)
    } catch {
      canonical = clean(canonicalHref)
    }
  }
  const links = new Set<string>()
  for (const a of document.querySelectorAll('a[href]')) {
    if (links.size >= MAX_LINKS) break
    const path = internalPath(a.getAttribute('href') ?? '', url, origin)
    if (path) links.add(path)
  }
  const page = {
    title: clean(document.querySelector('title')?.textContent),
    metaDescription: clean(meta('description')),
    canonical,
    robotsMeta: clean(meta('robots')).toLowerCase(),
    h1: clean(document.querySelector('h1')?.textContent),
    links: [...links],
  }
  // text of adjacent blocks must not run together ("first</p><a>Docs" is two words)
  for (const block of document.querySelectorAll(BLOCKS)) block.appendChild(document.createTextNode(' '))
  // Readability rewrites the document: it runs last, on what the fields above no longer need
  const body = clean(document.body?.textContent, Number.MAX_SAFE_INTEGER)
  let article: string | null | undefined
  try {
    article = new Readability(document as unknown as Document, { serializer: () => '', charThreshold: 20 }).parse()?.textContent
  } catch {
    article = null
  }
  const mainText = clean(article, Number.MAX_SAFE_INTEGER) || body
  return { ...page, mainText, wordCount: countWords(mainText) }
}

export const isNoindex = (robotsMeta: string) => /(^|[\s,])(noindex|none)([\s,]|$)/.test(robotsMeta)

/** A SHA-256 of the bytes, hex: what tells a changed page from an unchanged one. */
export async function contentHash(bytes: Uint8Array<ArrayBuffer> | string): Promise<string> {
  const data = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', data))
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
}
