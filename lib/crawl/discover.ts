import { XMLParser } from 'fast-xml-parser'
import robotsParser from 'robots-parser'
import { internalPath } from './parse'

/** Discovery: robots.txt and the sitemaps it names (or /sitemap.xml), indexes included. */

/** Most sitemap files read in one run (an index and the sitemaps it lists). */
export const MAX_SITEMAPS = 50

export interface Robots {
  /** False for a path robots.txt disallows our agent. */
  allows(path: string): boolean
  sitemaps: string[]
}

export function readRobots(origin: string, text: string, userAgent: string): Robots {
  const robots = robotsParser(`${origin}/robots.txt`, text)
  return {
    allows: (path) => robots.isAllowed(`${origin}${path}`, userAgent) !== false,
    sitemaps: robots.getSitemaps(),
  }
}

const xml = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  isArray: (name) => name === 'url' || name === 'sitemap',
  processEntities: true,
})

/** The page URLs and the nested sitemap URLs of one sitemap file; nothing for a file that is not one. */
export function readSitemap(text: string): { pages: string[]; sitemaps: string[] } {
  let doc: Record<string, unknown>
  try {
    doc = xml.parse(text) as Record<string, unknown>
  } catch {
    return { pages: [], sitemaps: [] }
  }
  const locs = (list: unknown) =>
    (Array.isArray(list) ? list : []).map((entry) => String((entry as { loc?: unknown })?.loc ?? '').trim()).filter(Boolean)
  return {
    pages: locs((doc.urlset as { url?: unknown } | undefined)?.url),
    sitemaps: locs((doc.sitemapindex as { sitemap?: unknown } | undefined)?.sitemap),
  }
}

/**
 * Every page path the site's sitemaps list, on `origin`, at most `cap`; `fetchText` fetches one
 * sitemap (null when it could not). `found` is false when no sitemap could be read at all.
 */
export async function sitemapPaths(
  origin: string,
  start: string[],
  cap: number,
  fetchText: (url: string) => Promise<string | null>,
): Promise<{ paths: Set<string>; found: boolean }> {
  const paths = new Set<string>()
  const queue = [...new Set(start)]
  const seen = new Set(queue)
  let found = false
  let read = 0
  while (queue.length && read < MAX_SITEMAPS && paths.size < cap) {
    const url = queue.shift()!
    read++
    const text = await fetchText(url)
    if (text === null) continue
    const { pages, sitemaps } = readSitemap(text)
    if (pages.length || sitemaps.length) found = true
    for (const page of pages) {
      const path = internalPath(page, new URL(url), origin)
      if (path && paths.size < cap) paths.add(path)
    }
    for (const nested of sitemaps) {
      if (!seen.has(nested) && internalPath(nested, new URL(url), origin)) {
        seen.add(nested)
        queue.push(nested)
      }
    }
  }
  return { paths, found }
}
