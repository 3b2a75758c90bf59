import { country } from './format'

/**
 * The API's report parameters, which the dashboard and its sections keep in their links and pass
 * through as given: the read checks them and names what is wrong.
 */
export const REPORT_KEYS = ['range', 'from', 'to', 'filters', 'source'] as const

/** One of the report's filters, as the `filters` parameter lists them. */
export interface Filter {
  dimension: string
  operator: string
  value: string[]
}

/**
 * The filters of a page's `filters` parameter, the dashboard's and the sections' alike. A malformed
 * one is left out here: the read is given the parameter as it is and refuses it with its message.
 */
export function parseFilters(param: string | undefined): Filter[] {
  if (!param) return []
  try {
    const parsed: unknown = JSON.parse(param)
    return Array.isArray(parsed) ? parsed.filter(isFilter) : []
  } catch {
    return []
  }
}

const isFilter = (f: unknown): f is Filter =>
  typeof f === 'object' && f !== null && typeof (f as Filter).dimension === 'string' && Array.isArray((f as Filter).value)

/** The `filters` parameter for a list of filters; none for an empty list. */
export const filtersParam = (filters: Filter[]) => (filters.length ? JSON.stringify(filters) : undefined)

/** A filter's value in words: a segment by its name, a country by its name (unless matched as text). */
export const chipValue = (f: Filter, segments: { id: string; name: string }[] = []) =>
  f.dimension === 'segment'
    ? f.value.map((id) => segments.find((s) => s.id === id)?.name ?? id).join(', ')
    : f.dimension === 'country' && f.operator !== 'contains' && f.operator !== 'matches'
      ? f.value.map(country).join(', ')
      : f.value.join(', ')

/** The filters as chips, a click on one opening `without(i)`: the page without that filter. */
export function FilterChips({
  filters,
  without,
  segments,
}: {
  filters: Filter[]
  without: (i: number) => string
  segments?: { id: string; name: string }[]
}) {
  if (!filters.length) return null
  return (
    <ul class="chips" aria-label="Filters">
      {filters.map((f, i) => (
        <li>
          <a href={without(i)} aria-label={`Remove filter ${f.dimension} ${f.operator} ${chipValue(f, segments)}`}>
            {f.dimension} {f.operator} {chipValue(f, segments)} <span aria-hidden="true">×</span>
          </a>
        </li>
      ))}
    </ul>
  )
}
