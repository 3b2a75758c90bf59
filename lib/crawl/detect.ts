import { diffWords } from 'diff'
import { type ParsedPage, countWords, isNoindex } from './parse'

/**
 * Change detection: a page's new snapshot against its previous one, and the changes of one run
 * that happened on most pages at once folded into one site change (docs/changes.md).
 */

/** Every change type and the category it belongs to. */
export const CHANGE_CATEGORIES = {
  new_page: 'content',
  removed: 'content',
  text: 'content',
  h1: 'content',
  title: 'seo',
  meta_description: 'seo',
  canonical: 'seo',
  noindex: 'seo',
  status: 'technical',
  redirect: 'technical',
  robots_txt: 'technical',
  sitemap: 'technical',
} as const
export type ChangeType = keyof typeof CHANGE_CATEGORIES
export type ChangeCategory = (typeof CHANGE_CATEGORIES)[ChangeType]
export const CHANGE_TYPES = Object.keys(CHANGE_CATEGORIES) as ChangeType[]
export const CATEGORIES = ['content', 'seo', 'technical'] as const

/** Main text longer than this (either side, in characters) is not word-diffed: its change is not diffable. */
export const DIFFABLE_MAX_CHARS = 100_000
/** A kind of change on at least this many pages of a run, and on more than half the pages compared, is one site change. */
export const SITE_WIDE_MIN_PAGES = 5
export const SITE_WIDE_SHARE = 0.5
/** Paths a site-wide change names as examples. */
const SAMPLE_PATHS = 10
/** Longest before and after value a change keeps. */
const VALUE_CHARS = 1000

/** What change detection reads of a snapshot. */
/** What a change is detected from: a snapshot's page fields as parsed, with its fetch. */
export interface ComparedSnapshot extends Omit<ParsedPage, 'links'> {
  id: string
  path: string
  status: number
  finalUrl: string
  contentType: string
  contentHash: string
  removed: boolean
}

export interface DetectedChange {
  scope: 'page' | 'site'
  path: string
  type: ChangeType
  category: ChangeCategory
  before: string
  after: string
  wordsAdded: number
  wordsRemoved: number
  diffable: boolean
  pages: number
  samplePaths: string[]
  beforeSnapshot: string | null
  afterSnapshot: string | null
}

export const isHtml = (contentType: string) => /^(text\/html|application\/xhtml\+xml)/i.test(contentType)
const ok = (status: number) => status >= 200 && status < 300

/** Words added and removed between two texts, from diffWords; over the size limit, the change in word count. */
export function wordChanges(before: string, after: string, beforeWords = countWords(before), afterWords = countWords(after)) {
  if (before.length > DIFFABLE_MAX_CHARS || after.length > DIFFABLE_MAX_CHARS) {
    return { wordsAdded: Math.max(0, afterWords - beforeWords), wordsRemoved: Math.max(0, beforeWords - afterWords) }
  }
  let wordsAdded = 0
  let wordsRemoved = 0
  for (const part of diffWords(before, after)) {
    if (part.added) wordsAdded += countWords(part.value.trim())
    else if (part.removed) wordsRemoved += countWords(part.value.trim())
  }
  return { wordsAdded, wordsRemoved }
}

/** Whether a change of this type between these snapshots has a word diff. */
export function isDiffable(type: ChangeType, before: ComparedSnapshot, after: ComparedSnapshot): boolean {
  if (type === 'text')
    return (
      isHtml(before.contentType) &&
      isHtml(after.contentType) &&
      before.mainText.length <= DIFFABLE_MAX_CHARS &&
      after.mainText.length <= DIFFABLE_MAX_CHARS
    )
  return type === 'title' || type === 'meta_description' || type === 'h1'
}

const clip = (value: string) => value.slice(0, VALUE_CHARS)

function change(
  type: ChangeType,
  path: string,
  before: string,
  after: string,
  from: ComparedSnapshot | null,
  to: ComparedSnapshot,
  extra: Partial<DetectedChange> = {},
): DetectedChange {
  return {
    scope: 'page',
    path,
    type,
    category: CHANGE_CATEGORIES[type],
    before: clip(before),
    after: clip(after),
    wordsAdded: 0,
    wordsRemoved: 0,
    diffable: from ? isDiffable(type, from, to) : false,
    pages: 1,
    samplePaths: [],
    beforeSnapshot: from?.id ?? null,
    afterSnapshot: to.id,
    ...extra,
  }
}

/**
 * The changes from `before` (the page's previous successful snapshot, or null for a page never
 * seen) to `after`. A removed page records only its removal; content is compared only between
 * two successful (2xx) answers.
 */
export function comparePage(before: ComparedSnapshot | null, after: ComparedSnapshot): DetectedChange[] {
  const { path } = after
  if (!before) return after.removed ? [] : [change('new_page', path, '', String(after.status), null, after)]
  if (!before.removed && after.removed)
    return [
      change(
        'removed',
        path,
        String(before.status),
        after.status === 404 || after.status === 410 ? String(after.status) : 'gone from the sitemap',
        before,
        after,
      ),
    ]
  if (before.removed && !after.removed) return [change('new_page', path, 'removed', String(after.status), before, after)]
  const found: DetectedChange[] = []
  if (before.status !== after.status) found.push(change('status', path, String(before.status), String(after.status), before, after))
  if (before.finalUrl !== after.finalUrl) found.push(change('redirect', path, before.finalUrl, after.finalUrl, before, after))
  if (!ok(before.status) || !ok(after.status)) return found
  if (isHtml(before.contentType) && isHtml(after.contentType)) {
    if (before.title !== after.title) found.push(change('title', path, before.title, after.title, before, after))
    if (before.metaDescription !== after.metaDescription)
      found.push(change('meta_description', path, before.metaDescription, after.metaDescription, before, after))
    if (before.canonical !== after.canonical) found.push(change('canonical', path, before.canonical, after.canonical, before, after))
    if (isNoindex(before.robotsMeta) !== isNoindex(after.robotsMeta))
      found.push(change('noindex', path, before.robotsMeta, after.robotsMeta, before, after))
    if (before.h1 !== after.h1) found.push(change('h1', path, before.h1, after.h1, before, after))
  }
  if (before.contentHash !== after.contentHash) {
    const words =
      isHtml(before.contentType) && isHtml(after.contentType)
        ? wordChanges(before.mainText, after.mainText, before.wordCount, after.wordCount)
        : { wordsAdded: 0, wordsRemoved: 0 }
    found.push(change('text', path, `${before.wordCount} words`, `${after.wordCount} words`, before, after, words))
  }
  return found
}

/**
 * Folds a kind of change seen on most of the run's compared pages (a template edit, a site-wide
 * outage) into one site change that counts the pages and names a few.
 */
export function foldSiteWide(changes: DetectedChange[], comparedPages: number): DetectedChange[] {
  const byType = new Map<ChangeType, DetectedChange[]>()
  for (const c of changes) byType.set(c.type, [...(byType.get(c.type) ?? []), c])
  const out: DetectedChange[] = []
  for (const [type, list] of byType) {
    if (type === 'new_page' || list.length < SITE_WIDE_MIN_PAGES || list.length <= comparedPages * SITE_WIDE_SHARE) {
      out.push(...list)
      continue
    }
    const first = list[0]
    out.push({
      ...first,
      scope: 'site',
      path: '',
      diffable: false,
      pages: list.length,
      samplePaths: list.slice(0, SAMPLE_PATHS).map((c) => c.path),
      wordsAdded: list.reduce((n, c) => n + c.wordsAdded, 0),
      wordsRemoved: list.reduce((n, c) => n + c.wordsRemoved, 0),
      beforeSnapshot: null,
      afterSnapshot: null,
    })
  }
  return out
}

/** A change of the whole site that is not a page's (robots.txt, the sitemap). */
export function siteChange(
  type: 'robots_txt' | 'sitemap',
  before: string,
  after: string,
  samplePaths: string[] = [],
  pages = 0,
): DetectedChange {
  return {
    scope: 'site',
    path: '',
    type,
    category: CHANGE_CATEGORIES[type],
    before: clip(before),
    after: clip(after),
    wordsAdded: 0,
    wordsRemoved: 0,
    diffable: false,
    pages,
    samplePaths: samplePaths.slice(0, SAMPLE_PATHS),
    beforeSnapshot: null,
    afterSnapshot: null,
  }
}

/** The word-level runs from `before` to `after`, as the diff read answers them. */
export function wordRuns(before: string, after: string) {
  return diffWords(before, after).map((part) => ({
    op: part.added ? ('added' as const) : part.removed ? ('removed' as const) : ('equal' as const),
    text: part.value,
  }))
}
