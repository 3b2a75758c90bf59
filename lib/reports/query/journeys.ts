import { Temporal } from 'temporal-polyfill'
import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import { collectorRead, standaloneQuery } from './behaviour'
import { activitySql } from './compile/activity'
import { type FlowAnchor, OTHER_PATH, flowRolledDaysSql, flowSql, rolledFlowSql } from './compile/flow'
import { journeyPageSql, journeysSql, visitorEventsSql } from './compile/journeys'
import type { Query } from './model'
import type { ReportParams } from './parse'
import { type SignatureRow, rolledDaysOf } from './plan'
import { rangeView, wholeDays } from './range'
import type { ReportDeps } from './reports'
import { execute } from '../../storage/clickhouse/execute'
import { runRead } from './run'
import { filteredFlowDays } from '../rollup/flow'

/**
 * The reads that follow visitors through the site: the behaviour flow, journeys (one visitor's
 * day), and the live tape of actions. First-party data: a site without the standalone source
 * answers `available: false`.
 */

type Row = Record<string, unknown>
const numberOf = (v: unknown) => Number(v ?? 0)
const isoOf = (epochMs: unknown) => new Date(numberOf(epochMs)).toISOString()

/** Said with every journey answer: what a visitor id is, and what it cannot be used for. */
export const VISITOR_ID_NOTE =
  'A visitor id is a hash salted afresh every site-local day and per site: the same person has a new id each day and on each site, so ids cannot be joined across days or sites, nor traced back to a person.'

// --- flow

export interface FlowParams extends ReportParams {
  start_path?: string
  focus_path?: string
  depth?: number
}

/** Steps a flow follows when `depth` is not given. */
export const FLOW_DEFAULT_DEPTH = 3
/** Pages kept per step when `limit` is not given; the rest fold into the step's "(other)" node. */
export const FLOW_DEFAULT_LIMIT = 10
/**
 * Most pages kept per step: more is no longer a graph anyone reads, and the cost of folding grows
 * with the kept pages (at 1M events a month, 0.3 s at 100, 4 s at 1,000). Larger limits are clamped.
 */
export const FLOW_MAX_LIMIT = 100

const flowNodeId = (step: number, path: string) => `${step}:${path}`

/** The folded graph's rows (node, next node, visits) as nodes and links, in a stable order. */
function flowGraph(rows: Row[], limit: number) {
  const nodes = new Map<string, { id: string; step: number; path: string; other: boolean; visits: number; folded: number }>()
  const links: { source: string; target: string; visits: number; step: number }[] = []
  for (const r of rows) {
    const step = numberOf(r.step)
    const path = String(r.node)
    const id = flowNodeId(step, path)
    const other = path === OTHER_PATH
    const node = nodes.get(id) ?? { id, step, path, other, visits: 0, folded: other ? numberOf(r.paths) - limit : 0 }
    node.visits += numberOf(r.visits)
    nodes.set(id, node)
    if (r.next_node !== '') links.push({ source: id, target: flowNodeId(step + 1, String(r.next_node)), visits: numberOf(r.visits), step })
  }
  return {
    nodes: [...nodes.values()].sort(
      (a, b) => a.step - b.step || Number(a.other) - Number(b.other) || b.visits - a.visits || (a.path < b.path ? -1 : 1),
    ),
    links: links
      .sort((a, b) => a.step - b.step || b.visits - a.visits || (a.source + a.target < b.source + b.target ? -1 : 1))
      .map(({ source, target, visits }) => ({ source, target, visits })),
  }
}

/**
 * The folded graph's rows (step, node, next node, visits, pages of the step), as flowSql answers
 * them, from rolledFlowSql's nodes and the links between kept pages. At each step the `limit`
 * pages with the most visits (ties to the smaller path) are kept; a visit at a page either left
 * there or went on to the next step, so what a kept page sent to pages folded is what it sent on
 * less its links to kept ones, what a kept page received from folded ones is its visits that came
 * from the step before (all but those whose sequence opens there) less its links from kept ones,
 * and the folded node sent on the rest of the step's visits that went on.
 */
export function foldRolledFlow(rows: Row[], limit: number, after: number): Row[] {
  type Node = { path: string; visits: number; exits: number; opens: number; rank: number }
  const steps = new Map<number, Node[]>()
  const links = new Map<string, number>()
  const linkKey = (step: number, path: string, next: string) => JSON.stringify([step, path, next])
  for (const r of rows) {
    const step = numberOf(r.step)
    if (numberOf(r.kind) === 1) links.set(linkKey(step, String(r.path), String(r.next_path)), numberOf(r.visits))
    else {
      const nodes = steps.get(step) ?? []
      nodes.push({
        path: String(r.path),
        visits: numberOf(r.visits),
        exits: numberOf(r.exits),
        opens: numberOf(r.opens),
        rank: numberOf(r.node_rank),
      })
      steps.set(step, nodes)
    }
  }
  const keptAt = new Map<number, Node[]>()
  const foldedAt = new Map<number, Node[]>()
  for (const [step, nodes] of steps) {
    // ranked by the engine (most visits, ties to the smaller path), as flowSql ranks them
    nodes.sort((a, b) => a.rank - b.rank)
    keptAt.set(step, nodes.slice(0, limit))
    foldedAt.set(step, nodes.slice(limit))
  }
  const out: Row[] = []
  const sum = (nodes: Node[], f: (n: Node) => number) => nodes.reduce((total, n) => total + f(n), 0)
  for (const [step, nodes] of steps) {
    const paths = nodes.length
    const push = (node: string, next: string, visits: number) => {
      if (visits > 0) out.push({ step, node, next_node: next, visits, paths })
    }
    const kept = keptAt.get(step) ?? []
    const folded = foldedAt.get(step) ?? []
    const nextKept = step < after ? (keptAt.get(step + 1) ?? []) : []
    const nextFolded = step < after ? (foldedAt.get(step + 1) ?? []) : []
    const onward = (n: Node) => n.visits - n.exits
    // from folded pages to each kept page of the next step: its visits from this step less those from kept pages
    let foldedToKept = 0
    for (const next of nextKept) {
      const fromKept = sum(kept, (n) => links.get(linkKey(step, n.path, next.path)) ?? 0)
      const fromFolded = next.visits - next.opens - fromKept
      push(OTHER_PATH, next.path, fromFolded)
      foldedToKept += fromFolded
    }
    for (const n of kept) {
      push(n.path, '', n.exits)
      let toKept = 0
      for (const next of nextKept) {
        const visits = links.get(linkKey(step, n.path, next.path)) ?? 0
        push(n.path, next.path, visits)
        toKept += visits
      }
      if (nextFolded.length) push(n.path, OTHER_PATH, onward(n) - toKept)
    }
    push(
      OTHER_PATH,
      '',
      sum(folded, (n) => n.exits),
    )
    if (nextFolded.length) push(OTHER_PATH, OTHER_PATH, sum(folded, onward) - foldedToKept)
  }
  return out
}

/**
 * GET /flow: from the landing page, a start page (forward) or a focus page (before and after),
 * `depth` steps of the pages visits went through, rare pages folded per step.
 */
async function flowRead(deps: ReportDeps, site: Site, params: FlowParams) {
  if (params.start_path !== undefined && params.focus_path !== undefined)
    throw new ApiError(400, 'focus_path: give either start_path or focus_path, not both')
  const depth = params.depth ?? FLOW_DEFAULT_DEPTH
  const anchor: FlowAnchor =
    params.focus_path !== undefined
      ? { kind: 'focus', path: params.focus_path }
      : params.start_path !== undefined
        ? { kind: 'start', path: params.start_path }
        : { kind: 'entry' }
  const head = { anchor: anchor.kind, path: anchor.kind === 'entry' ? null : anchor.path, depth }
  const query = await standaloneQuery(deps, site, { ...params, limit: Math.min(params.limit ?? FLOW_DEFAULT_LIMIT, FLOW_MAX_LIMIT) })
  if (!query) return { available: false, ...head, visits: 0, nodes: [], links: [] }
  const before = anchor.kind === 'focus' ? depth : 0
  // a flow over whole days takes the days whose flow rollup is current from it: without filters the
  // rollup the refresh builds, with filters its anchor's rolled up under them on the first read
  const { rolled, buildAfter } = !wholeDays(query.range)
    ? { rolled: undefined }
    : query.filters.length
      ? await filteredFlowDays(deps.clickhouse, query, anchor)
      : { rolled: rolledDaysOf(query, await execute<SignatureRow>(deps.clickhouse, flowRolledDaysSql(query.siteId, query.range))) }
  const rows = rolled?.days.length
    ? foldRolledFlow(await execute<Row>(deps.clickhouse, rolledFlowSql(query, anchor, before, depth, rolled)), query.limit, depth)
    : await execute<Row>(deps.clickhouse, flowSql(query, anchor, before, depth))
  // a filter's first flow answered from visit_pages: its days are rolled up now
  buildAfter?.()
  const graph = flowGraph(rows, query.limit)
  const visits = graph.nodes.filter((n) => n.step === 0).reduce((sum, n) => sum + n.visits, 0)
  return { available: true, range: rangeView(query.range), ...head, visits, ...graph }
}

// --- recorded actions, as journeys and the tape list them

/** One recorded event as the answer shows it: what happened where, with the fields its kind carries. */
function shapeAction(r: Row) {
  const kind = String(r.kind)
  const props = (r.props ?? {}) as Record<string, string>
  return {
    timestamp: isoOf(r.at),
    kind,
    name: String(r.name),
    path: String(r.pathname),
    ...(['click', 'outbound', 'download', 'affiliate', 'form'].includes(kind)
      ? {
          element: {
            selector: String(r.selector),
            text: String(r.element_text),
            tag: String(r.element_tag),
            url: String(r.link_url),
            dead: numberOf(r.dead_click) === 1,
          },
        }
      : {}),
    ...(kind === 'error' ? { error: { name: String(r.error_name), message: String(r.error_message) } } : {}),
    ...(kind === 'engagement' ? { engagement: { ms: numberOf(r.engaged_ms), scroll: numberOf(r.scroll_depth) } } : {}),
    ...(kind === 'vital' ? { vital: { name: String(r.vital_name), value: numberOf(r.vital_value) } } : {}),
    ...(Object.keys(props).length ? { props } : {}),
  }
}

// --- journeys

export interface JourneyParams extends ReportParams {
  visitor?: string
  offset?: number
}

/** The events a visitor's stream lists at most. */
export const JOURNEY_EVENTS = 1000

function shapeJourney(r: Row, timezone: string) {
  return {
    visitor: String(r.visitor),
    day: Temporal.Instant.fromEpochMilliseconds(numberOf(r.first_seen)).toZonedDateTimeISO(timezone).toPlainDate().toString(),
    firstSeen: isoOf(r.first_seen),
    lastSeen: isoOf(r.last_seen),
    landingPage: String(r.landing),
    exitPage: String(r.exit_page),
    duration: Math.round(numberOf(r.duration_ms) / 1000),
    visits: numberOf(r.visits),
    pageviews: numberOf(r.pageviews),
    events: numberOf(r.custom_events),
    source: String(r.source),
    referrer: String(r.referrer),
    country: String(r.country),
    device: String(r.device),
    browser: String(r.browser),
  }
}

/**
 * When the visits of a page of visitor ids began at the earliest (epoch ms): a visitor id lives
 * within one site-local day (25 hours at most, on a clock change), so its visits began less than
 * 26 hours before its last event.
 */
function pageBegan(page: Row[]): number {
  return Math.min(...page.map((r) => Date.parse(`${String(r.last_end).replace(' ', 'T')}Z`))) - 26 * 3_600_000
}

/** The journeys of a page of visitor ids (journeyPageSql), newest first. */
const journeysOf = async (deps: ReportDeps, query: Query, page: Row[]) =>
  page.length
    ? execute<Row>(
        deps.clickhouse,
        journeysSql(
          query,
          page.map((r) => String(r.visitor)),
          pageBegan(page),
        ),
      )
    : []

/** A page of journeys: its visitor ids first, then their journeys. */
const journeyRows = async (deps: ReportDeps, query: Query, page: { offset: number; visitor?: string }) =>
  journeysOf(deps, query, await execute<Row>(deps.clickhouse, journeyPageSql(query, page)))

/** A page of visitor ids and the window's total, from every visit of the window. */
async function pageOfWindow(deps: ReportDeps, query: Query, offset: number): Promise<{ page: Row[]; total: number }> {
  const page = await execute<Row>(deps.clickhouse, journeyPageSql(query, { offset }))
  // the total rides on every row of the page; past the last page there is none, so count again without the offset
  const total = page.length
    ? numberOf(page[0].total)
    : offset
      ? numberOf((await execute<Row>(deps.clickhouse, journeyPageSql({ ...query, limit: 1 }, { offset: 0 })))[0]?.total)
      : 0
  return { page, total }
}

/**
 * An unfiltered read's page and total from the window's visitors per site-local day (the daily
 * series, its finished days from the daily rollup). A visitor id lives within one day, so the
 * total is their sum, as the window's visitors are. The journeys ending on the last days that hold
 * offset + limit visitors come first in the page's order, so only those days' visits are grouped
 * (journeyPageSql with `since`); should they hold fewer, the whole window is read.
 */
async function pageByDays(deps: ReportDeps, query: Query, offset: number): Promise<{ page: Row[]; total: number }> {
  const days = await runRead<Row>(
    deps.clickhouse,
    { ...query, sample: undefined, range: { ...query.range, interval: 'day' } },
    { kind: 'series' },
  )
  const newestFirst = days
    .map((r) => ({ start: numberOf(r.bucket) * 1000, visitors: numberOf(r.visitors) }))
    .sort((a, b) => b.start - a.start)
  const total = newestFirst.reduce((n, d) => n + d.visitors, 0)
  if (offset >= total) return { page: [], total }
  let held = 0
  const since = newestFirst.find((d) => (held += d.visitors) >= offset + query.limit)?.start
  if (since === undefined) return { page: (await pageOfWindow(deps, query, offset)).page, total }
  const page = await execute<Row>(deps.clickhouse, journeyPageSql(query, { offset, since }))
  if (page.length < Math.min(query.limit, total - offset)) return { page: (await pageOfWindow(deps, query, offset)).page, total }
  return { page, total }
}

/**
 * GET /journeys: the window's journeys (one per visitor and site-local day), newest first, paged
 * by offset; with `visitor`, that journey and its every event.
 */
async function journeysRead(deps: ReportDeps, site: Site, params: JourneyParams) {
  const offset = params.offset ?? 0
  const query = await standaloneQuery(deps, site, params)
  if (params.visitor !== undefined) {
    const visitor = params.visitor
    if (!query) return { available: false, note: VISITOR_ID_NOTE, visitor, journey: null, events: [], truncated: false }
    const [rows, events] = await Promise.all([
      journeyRows(deps, { ...query, filters: [], limit: 1 }, { offset: 0, visitor }),
      execute<Row>(deps.clickhouse, visitorEventsSql(query, visitor, JOURNEY_EVENTS + 1)),
    ])
    return {
      available: true,
      range: rangeView(query.range),
      note: VISITOR_ID_NOTE,
      visitor,
      journey: rows[0] ? shapeJourney(rows[0], site.timezone) : null,
      events: events.slice(0, JOURNEY_EVENTS).map(shapeAction),
      truncated: events.length > JOURNEY_EVENTS,
    }
  }
  if (!query) return { available: false, note: VISITOR_ID_NOTE, total: 0, offset, nextOffset: null, journeys: [] }
  const { page, total } = query.filters.length ? await pageOfWindow(deps, query, offset) : await pageByDays(deps, query, offset)
  const rows = await journeysOf(deps, query, page)
  const next = offset + rows.length
  return {
    available: true,
    range: rangeView(query.range),
    note: VISITOR_ID_NOTE,
    total,
    offset,
    nextOffset: next < total ? next : null,
    journeys: rows.map((r) => shapeJourney(r, site.timezone)),
  }
}

// --- activity

export interface ActivityParams extends Omit<ReportParams, 'range' | 'from' | 'to'> {
  window?: '5m' | '30m'
}

/** GET /activity: the live tape of the last 5 or 30 minutes, newest first. */
async function activityRead(deps: ReportDeps, site: Site, params: ActivityParams) {
  const window = params.window ?? '30m'
  // the window overrides the range, which activity does not take
  const query = await standaloneQuery(deps, site, { ...params, range: '30d' }, { range: window })
  if (!query) return { available: false, window, actions: [] }
  const rows = await execute<Row>(deps.clickhouse, activitySql(query))
  return {
    available: true,
    range: rangeView(query.range),
    window,
    actions: rows.map((r) => ({
      ...shapeAction(r),
      visitor: String(r.visitor),
      source: String(r.source),
      referrer: String(r.referrer),
      country: String(r.country_code),
      device: String(r.device),
      browser: String(r.browser),
    })),
  }
}

export const flow = (deps: ReportDeps, site: Site, params: FlowParams) => collectorRead(site, params, () => flowRead(deps, site, params))

export const journeys = (deps: ReportDeps, site: Site, params: JourneyParams) =>
  collectorRead(site, params, () => journeysRead(deps, site, params))

export const activity = (deps: ReportDeps, site: Site, params: ActivityParams) =>
  collectorRead(site, params, () => activityRead(deps, site, params))
