/**
 * The reference GA4 import the tests compare with: each session's share of a dataset (the whole
 * session, or one of its pages or event names) grouped per dataset by date, hour and the dataset's
 * columns, as an import stores them. Visitors are distinct users of the group (GA4's totalUsers).
 */
import { IMPORTED_DIMENSION_COLUMNS } from '../lib/reports/query/ga4-datasets'

/** One session's share of one dataset group. */
export interface ImportUnit {
  user: string
  date: string
  /** Set only on hourly datasets. */
  hour?: number
  engaged: boolean
  dims: Record<string, string>
  pageviews: number
  seconds: number
  events: number
}

export type ImportedRow = Record<string, string | number>

export function importedRowsOf(siteId: string, datasets: Record<string, ImportUnit[]>, version = 1): ImportedRow[] {
  const rows: ImportedRow[] = []
  for (const [dataset, units] of Object.entries(datasets)) {
    const groups = new Map<string, ImportUnit[]>()
    for (const u of units) {
      const key = JSON.stringify([u.date, u.hour ?? 0, u.dims])
      groups.set(key, [...(groups.get(key) ?? []), u])
    }
    for (const [key, group] of groups) {
      const [date, hour, dims] = JSON.parse(key) as [string, number, Record<string, string>]
      const row: ImportedRow = { site_id: siteId, source: 'ga4', dataset, date, hour }
      for (const c of IMPORTED_DIMENSION_COLUMNS) row[c] = dims[c] ?? ''
      Object.assign(row, {
        visitors: new Set(group.map((u) => u.user)).size,
        visits: group.length,
        engaged_visits: group.filter((u) => u.engaged).length,
        pageviews: group.reduce((n, u) => n + u.pageviews, 0),
        engagement_seconds: group.reduce((n, u) => n + u.seconds, 0),
        events: group.reduce((n, u) => n + u.events, 0),
        version,
      })
      rows.push(row)
    }
  }
  return rows
}
