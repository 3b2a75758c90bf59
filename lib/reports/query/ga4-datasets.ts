/**
 * The GA4 datasets an import fetches and the reads of `source=ga4` answer from: per dataset, the
 * Data API dimensions asked for beside `date` (or `dateHour`), each stored under its column of
 * `imported_aggregates` (clickhouse/0013_imported_aggregates.sql). The import and the reads both
 * take their facts from here, and the dimension table (lib/reports/dimensions.ts) names the
 * dataset and column of each dimension a ga4 read takes.
 */

/** The columns of `imported_aggregates` that hold a dimension value. */
export const IMPORTED_DIMENSION_COLUMNS = [
  'source_name',
  'referrer',
  'channel',
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_content',
  'utm_term',
  'hostname',
  'path',
  'entry_page',
  'country',
  'region',
  'city',
  'device',
  'browser',
  'os',
  'event',
] as const
export type ImportedColumn = (typeof IMPORTED_DIMENSION_COLUMNS)[number]

/** The Data API metrics every dataset asks for, and the column each is stored under. */
export const GA4_METRICS = [
  { ga4: 'totalUsers', column: 'visitors' },
  { ga4: 'sessions', column: 'visits' },
  { ga4: 'engagedSessions', column: 'engaged_visits' },
  { ga4: 'screenPageViews', column: 'pageviews' },
  { ga4: 'userEngagementDuration', column: 'engagement_seconds' },
  { ga4: 'eventCount', column: 'events' },
] as const

export interface Ga4Dataset {
  name: string
  /** Keyed by `dateHour` (stored as its date and hour) instead of `date`. */
  hourly?: true
  dimensions: readonly { ga4: string; column: ImportedColumn }[]
}

export const GA4_DATASETS = [
  { name: 'visitors', dimensions: [] },
  { name: 'visitors_hourly', hourly: true, dimensions: [] },
  {
    name: 'sources',
    dimensions: [
      { ga4: 'sessionSource', column: 'source_name' },
      { ga4: 'sessionManualSource', column: 'utm_source' },
      { ga4: 'sessionMedium', column: 'utm_medium' },
      { ga4: 'sessionCampaignName', column: 'utm_campaign' },
      { ga4: 'sessionManualAdContent', column: 'utm_content' },
      { ga4: 'sessionManualTerm', column: 'utm_term' },
      { ga4: 'sessionDefaultChannelGroup', column: 'channel' },
      { ga4: 'pageReferrer', column: 'referrer' },
    ],
  },
  {
    name: 'pages',
    dimensions: [
      { ga4: 'hostName', column: 'hostname' },
      { ga4: 'pagePath', column: 'path' },
    ],
  },
  // users per hostname on their own: summed over the pages dataset's rows, a user of two pages of a host counts twice
  { name: 'hostnames', dimensions: [{ ga4: 'hostName', column: 'hostname' }] },
  { name: 'entry_pages', dimensions: [{ ga4: 'landingPage', column: 'entry_page' }] },
  {
    name: 'locations',
    dimensions: [
      { ga4: 'countryId', column: 'country' },
      { ga4: 'region', column: 'region' },
      { ga4: 'city', column: 'city' },
    ],
  },
  { name: 'devices', dimensions: [{ ga4: 'deviceCategory', column: 'device' }] },
  { name: 'browsers', dimensions: [{ ga4: 'browser', column: 'browser' }] },
  { name: 'systems', dimensions: [{ ga4: 'operatingSystem', column: 'os' }] },
  { name: 'events', dimensions: [{ ga4: 'eventName', column: 'event' }] },
] as const satisfies readonly Ga4Dataset[]

export type Ga4DatasetName = (typeof GA4_DATASETS)[number]['name']

/** GA4's automatic events: `events` counts only the others, and ga4-events lists them only with builtin=1. */
export const GA4_AUTOMATIC_EVENTS = [
  'page_view',
  'session_start',
  'first_visit',
  'user_engagement',
  'scroll',
  'click',
  'file_download',
  'form_start',
  'form_submit',
  'view_search_results',
  'video_start',
  'video_progress',
  'video_complete',
] as const

/** GA4 placeholders that mean "no value": stored as '' like a first-party empty value. */
const NO_VALUE = new Set(['(not set)', '(data not available)'])
/** Placeholders GA4 puts in traffic-source fields of direct, organic and referral sessions: no source or campaign was given. */
const NO_SOURCE = new Set(['(direct)', '(none)', '(organic)', '(referral)'])
const SOURCE_COLUMNS = new Set(['source_name', 'utm_source', 'utm_medium', 'utm_campaign', 'utm_content', 'utm_term'])

/** GA4's device categories under the names the collector gives devices, so a `device` filter takes the same values on both sources. */
const DEVICES: Record<string, string> = { desktop: 'Desktop', mobile: 'Mobile', tablet: 'Tablet', 'smart tv': 'TV' }

/** A GA4 dimension value as the reads expect it in `column`. */
export function normalizeValue(column: string, value: string): string {
  if (NO_VALUE.has(value)) return ''
  if (SOURCE_COLUMNS.has(column) && NO_SOURCE.has(value)) return ''
  if (column === 'device') return DEVICES[value.toLowerCase()] ?? value
  if (column === 'country') return value.toUpperCase()
  return value
}
