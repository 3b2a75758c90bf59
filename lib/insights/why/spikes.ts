import type { SourceRepositories } from '../../integrations/source-services'
import { createAnnotation } from '../../sites/annotations'
import { ApiError } from '../../core/errors'
import { rangeView } from '../../reports/query/range'
import { execute } from '../../storage/clickhouse/execute'
import type { Site } from '../../sites/sites'
import type { Annotation } from '../../sites/definition-records'
import { SPIKE_DIMENSIONS } from '../../reports/dimensions'
import { type Grain, visitorsBySourceSql } from './compile'
import { round4 } from './robust'
import { SHIFT_RULE, type Shift, judgeBuckets, parseShiftId, shiftId, shiftsOf, sum } from './shifts'
import { type WhyDeps, type WindowParams, isoLocal, windowOf, zoned } from '../../reports/query/window'
import { importedVisitorsBySourceSql } from './imported-days'
import { parseSource } from '../../reports/query/parse'
import { filteredQuery } from '../../reports/query/filtered'
import type { ReportDeps } from '../../reports/query/reports'
import type { Query } from '../../reports/query/model'
import type { Source } from '../../sites/source'

/**
 * GET /spikes: the window's spikes (docs/traffic-changes.md), newest first, each with the source
 * that accounts for most of its excess, and the source attached by hand, if any.
 */

export interface SpikeParams extends WindowParams {
  source?: Source
  filters?: string
  interval?: Grain
  limit?: number
}

/** A source that accounts for at least this share of the excess is named over a broader one. */
export const DOMINANT_SHARE = 0.5
/** What a spike's excess is attributed to, most specific first: a campaign, then a referring source, then a channel. */
const ATTRIBUTION_ORDER = SPIKE_DIMENSIONS.map((d) => d.name)

export interface SpikeSource {
  dimension: string
  value: string
  referrerUrl: string | null
  visitors: number
  expected: number
  excess: number
  share: number
}

type Row = { bucket: number | string; dimension: string; value: string; visitors: number | string; referrer: string }

/** The source of each spike's excess, read for all of them in one statement. */
async function attribute(
  deps: WhyDeps,
  site: Site,
  grain: Grain,
  spikes: Shift[],
  source: Source,
  filtered: Query | null,
): Promise<(SpikeSource | null)[]> {
  if (!spikes.length) return []
  // GA4's sources are daily: an hour's spike of the ga4 source has none to attribute (GA4_HOURLY_SOURCES)
  if (source === 'ga4' && grain === 'hour') return spikes.map(() => null)
  const seconds = new Set<number>()
  for (const s of spikes) for (const b of s.buckets) for (const at of [b.start, ...b.baseline]) seconds.add(at)
  const spans = [...seconds]
    .sort((a, b) => a - b)
    .map((at) => {
      const from = zoned(at * 1000, site.timezone)
      return { from, to: grain === 'hour' ? from.add({ hours: 1 }) : from.add({ days: 1 }).startOfDay() }
    })
  const rows = await execute<Row>(
    deps.clickhouse,
    source === 'ga4'
      ? importedVisitorsBySourceSql(
          site.id,
          site.timezone,
          spans.map((s) => s.from.toPlainDate()),
        )
      : visitorsBySourceSql(
          site.id,
          site.timezone,
          grain,
          spans,
          filtered ? { ...filtered, range: { ...filtered.range, from: spans[0].from, to: spans[spans.length - 1].to } } : undefined,
        ),
  )
  const cell = new Map<string, Row>()
  for (const r of rows) cell.set(`${Number(r.bucket)}|${r.dimension}|${r.value}`, r)
  const visitorsAt = (at: number, dimension: string, value: string) => Number(cell.get(`${at}|${dimension}|${value}`)?.visitors ?? 0)
  return spikes.map((spike) => {
    const excess = sum(spike.buckets.map((b) => b.visitors - b.expected))
    if (excess <= 0) return null
    const inSpike = new Set(spike.buckets.map((b) => b.start))
    const candidates = ATTRIBUTION_ORDER.map((dimension) => {
      const values = new Set(rows.filter((r) => r.dimension === dimension && inSpike.has(Number(r.bucket))).map((r) => r.value))
      let best: SpikeSource | null = null
      for (const value of values) {
        if (value === '' && dimension !== 'channel') continue
        const visitors = sum(spike.buckets.map((b) => visitorsAt(b.start, dimension, value)))
        // a source's usual visitors: its mean over the baseline buckets (most sources are absent from most of them, so a median would say 0)
        const expected = sum(spike.buckets.map((b) => sum(b.baseline.map((at) => visitorsAt(at, dimension, value))) / b.baseline.length))
        const own = visitors - expected
        if (
          !best ||
          own > best.excess ||
          (own === best.excess && (visitors > best.visitors || (visitors === best.visitors && value < best.value)))
        ) {
          const referrers = spike.buckets.map((b) => cell.get(`${b.start}|${dimension}|${value}`)?.referrer ?? '').filter(Boolean)
          best = {
            dimension,
            value,
            referrerUrl: dimension === 'source' ? (referrers[0] ?? null) : null,
            visitors,
            expected: round4(expected),
            excess: round4(own),
            share: round4(Math.min(1, Math.max(0, own / excess))),
          }
        }
      }
      return best
    }).filter((c): c is SpikeSource => c !== null && c.excess > 0)
    return candidates.find((c) => c.share >= DOMINANT_SHARE) ?? [...candidates].sort((a, b) => b.share - a.share)[0] ?? null
  })
}

/** A spike_source annotation placed at a spike's start, newest first per spike. */
function attachedSources(annotations: Annotation[]): Map<number, Annotation> {
  const byStart = new Map<number, Annotation>()
  for (const a of annotations.filter((a) => a.kind === 'spike_source').sort((x, y) => x.createdAt.localeCompare(y.createdAt)))
    byStart.set(Date.parse(a.at) / 1000, a)
  return byStart
}

/** What an hour-grain spike read of the ga4 source cannot tell. */
const GA4_HOURLY_SOURCES = {
  part: 'spikes.source',
  reason: "GA4's imported traffic sources are per day, not per hour: ask interval=day to have each spike's source",
}

export async function spikes(
  deps: ReportDeps & { repositories: Pick<SourceRepositories, 'annotations' | 'goals' | 'segments'> },
  site: Site,
  params: SpikeParams,
) {
  const source = parseSource(params, site)
  const grain = params.interval ?? 'hour'
  const range = await windowOf(deps, site, params, deps.now(), source)
  const rule = { interval: grain, baselineWeeks: SHIFT_RULE.baselineWeeks, k: SHIFT_RULE.k, minExcess: SHIFT_RULE.minExcess[grain] }
  // under filters (a goal: the visitors of visits that converted) the buckets and the sources count the visitors they keep
  const filtered = await filteredQuery(deps, site, params, source, range)
  const judged = await judgeBuckets(deps, site, grain, range.from, range.to, source, filtered)
  const found = shiftsOf(judged, grain, 'up')
    .reverse()
    .slice(0, Math.min(1000, Math.max(1, params.limit ?? 100)))
  // a window without spikes has no sources to attribute nor annotations to attach
  const [sources, annotations] = found.length
    ? await Promise.all([attribute(deps, site, grain, found, source, filtered), deps.repositories.annotations.list(site.id)])
    : [[], []]
  const attached = attachedSources(annotations)
  const at = (seconds: number) => isoLocal(zoned(seconds * 1000, site.timezone))
  return {
    source,
    available: true,
    range: rangeView(range),
    ...(source === 'ga4' && grain === 'hour' ? { notAvailable: [GA4_HOURLY_SOURCES] } : {}),
    rule,
    spikes: await Promise.all(
      found.map(async (spike, i) => {
        const peak = spike.buckets.reduce((a, b) => (b.visitors - b.expected > a.visitors - a.expected ? b : a))
        const hand = attached.get(spike.start)
        return {
          id: await shiftId(site.id, grain, spike.start),
          start: at(spike.start),
          end: at(spike.end),
          visitors: sum(spike.buckets.map((b) => b.visitors)),
          expected: sum(spike.buckets.map((b) => b.expected)),
          excess: sum(spike.buckets.map((b) => b.visitors - b.expected)),
          peak: { start: at(peak.start), visitors: peak.visitors, expected: peak.expected },
          source: sources[i],
          attached: hand ? { annotationId: hand.id, title: hand.title, url: hand.url } : null,
        }
      }),
    ),
  }
}

/** Whether a spike starts at the id's bucket on this site: the bucket is judged again. */
export async function findSpike(
  deps: WhyDeps,
  site: Site,
  id: string,
  source: Source = site.primarySource,
): Promise<{ grain: Grain; start: number } | null> {
  const parsed = parseShiftId(id)
  if (!parsed || (await shiftId(site.id, parsed.grain, parsed.start)) !== id) return null
  const from = zoned(parsed.start * 1000, site.timezone)
  const to = parsed.grain === 'hour' ? from.add({ hours: 1 }) : from.add({ days: 1 }).startOfDay()
  const [bucket] = await judgeBuckets(deps, site, parsed.grain, from, to, source)
  return bucket?.start === parsed.start && bucket.direction === 'up' ? parsed : null
}

/** POST /spikes: names a spike's source by hand, kept as a spike_source annotation at the spike's start. */
export async function attachSpikeSource(
  deps: WhyDeps & { repositories: SourceRepositories },
  site: Site,
  input: { spike_id: string; url: string; title: string },
) {
  // the spike as the site's primary source finds it, as GET /spikes lists it by default
  const spike = await findSpike(deps, site, input.spike_id)
  if (!spike) throw new ApiError(404, 'spike_id: no spike of this site starts where this id says; take ids from GET /api/v1/spikes')
  const annotation = await createAnnotation(
    deps.repositories,
    site,
    {
      siteId: site.id,
      kind: 'spike_source',
      title: input.title,
      url: input.url,
      at: new Date(spike.start * 1000).toISOString(),
      body: `Source of spike ${input.spike_id}`,
    },
    deps.now(),
  )
  return { spikeId: input.spike_id, annotation }
}
