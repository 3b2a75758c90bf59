import type { StoredChange } from '../../crawl/changes'

/** A crawler change as candidate evidence. */
export const candidateOf = (c: StoredChange) => ({
  kind: c.scope === 'site' ? ('site_change' as const) : ('page_change' as const),
  changeId: c.id,
  detectedAt: c.detectedAt,
  type: c.type,
  category: c.category,
  path: c.path || null,
  before: c.before,
  after: c.after,
  wordsAdded: c.wordsAdded,
  wordsRemoved: c.wordsRemoved,
  pages: c.pages,
})
