import type { ClickHouse } from './types'

/** Every ClickHouse table that holds rows of a site. */
export const SITE_TABLES = [
  'events',
  'sessions',
  'bot_events',
  'quarters',
  'bot_quarters',
  'recent_events',
  'visit_pages',
  'day_rollups',
  'partial_rollups',
  'flow_rollups',
  'click_rollups',
  'ai_rollups',
  'error_rollups',
  'page_first_views',
  'crawl_snapshots',
  'crawl_changes',
  'backlink_checks',
  'backlink_provider_links',
  'backlink_days',
  'backlink_snapshots',
  'backlink_events',
  'search_console_rows',
  'search_console_totals',
  'imported_aggregates',
] as const

/** Removes all of a site's analytics rows, waiting for the mutations to finish. */
export async function deleteSiteData(clickhouse: ClickHouse, siteId: string) {
  for (const table of SITE_TABLES) {
    await clickhouse.command(`ALTER TABLE ${table} DELETE WHERE site_id = {site:UUID} SETTINGS mutations_sync = 2`, { site: siteId })
  }
}
