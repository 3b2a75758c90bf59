/**
 * The records a site's owners define, as stored: goals, funnels, segments and annotations. A leaf:
 * the repositories, the verbs and the reports all read these shapes without importing each other.
 */

export interface Goal {
  id: string
  name: string
  type: 'event' | 'page'
  /** An event name, or a path where `*` matches any characters. */
  matchValue: string
  currency: string | null
  createdAt: string
}

export const FUNNEL_STEP_TYPES = ['page', 'event', 'goal'] as const

export interface FunnelStep {
  type: (typeof FUNNEL_STEP_TYPES)[number]
  /** A path where `*` matches anything (page), an event name (event), or a goal id of the site (goal). */
  value: string
  label: string | null
}

export interface Funnel {
  id: string
  name: string
  steps: FunnelStep[]
  createdAt: string
  updatedAt: string
}

/**
 * One filter of a segment, as the reports' parser made it (lib/reports/query/model.ts's Filter,
 * which it matches): declared here so that the stored record does not pull the report pipeline in.
 */
export interface SavedFilter {
  dimension: string
  operator: 'is' | 'is_not' | 'contains' | 'matches'
  value: string[]
}

/** A saved set of filters, usable as one `segment` filter in every report. */
export interface Segment {
  id: string
  name: string
  filters: SavedFilter[]
  createdAt: string
}

export const ANNOTATION_KINDS = ['deploy', 'campaign', 'email', 'content', 'note', 'spike_source', 'other'] as const

/** A marker on the traffic chart. */
export interface Annotation {
  id: string
  siteId: string
  title: string
  at: string
  kind: (typeof ANNOTATION_KINDS)[number]
  body: string | null
  url: string | null
  createdAt: string
}
