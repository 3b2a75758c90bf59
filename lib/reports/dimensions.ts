/** The static vocabulary of reports (docs/api.md, Ranges and Filters). */
export const RANGES = ['realtime', 'today', 'yesterday', '7d', 'week', 'month', '30d', '90d', 'year', 'ytd', 'last-year', '12mo', 'all', 'custom'] as const
export type RangeName = (typeof RANGES)[number]

export const OPERATORS = ['is', 'is_not', 'contains', 'matches'] as const

/** Dimensions every source can filter and break down by. */
export const SHARED_DIMENSIONS = [
  'path', 'entry_page', 'exit_page', 'source', 'channel', 'referrer',
  'utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content',
  'country', 'region', 'city', 'browser', 'os', 'device', 'screen_class', 'hostname', 'event',
] as const

/** Dimensions only the first-party collector records; a `ga4` read rejects them. */
export const FIRST_PARTY_DIMENSIONS = ['goal', 'link', 'outbound', 'affiliate', 'button', 'dead_click', 'form', 'bot_kind', 'collection_source'] as const

/**
 * Dimensions a filter takes but a breakdown does not: `segment` names a saved segment of the site
 * and stands for its filters, checked against the read's source when it is expanded.
 */
export const FILTER_ONLY_DIMENSIONS = ['segment'] as const

/** Visit-scoped dimensions select whole visits; the rest select events. */
export const VISIT_SCOPED_DIMENSIONS = [
  'entry_page', 'exit_page', 'source', 'channel', 'referrer',
  'utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content',
  'country', 'region', 'city', 'browser', 'os', 'device', 'screen_class', 'goal',
] as const

export const METRICS = {
  visitors: 'distinct visitors (integer)',
  visits: 'distinct visits (integer)',
  pageviews: 'pageview events (integer)',
  bounceRate: 'fraction of visits with at most one pageview and no custom event, 0 to 1',
  avgDuration: 'mean visit duration in seconds',
  viewsPerVisit: 'pageviews divided by visits',
  events: 'custom events (not pageviews, clicks, errors, vitals or engagement reports)',
} as const

export const PROPERTY_PREFIX = 'prop:'
