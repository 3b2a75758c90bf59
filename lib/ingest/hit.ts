import { z } from 'zod'

/** Names the collector gives its own kinds; any other name is a custom event. */
export const COLLECTOR_KINDS = ['pageview', 'click', 'error', 'vital', 'engagement', 'form'] as const
export type EventKind = (typeof COLLECTOR_KINDS)[number] | 'custom' | 'outbound' | 'download' | 'affiliate'

const shortText = (max: number) => z.string().max(max)
const propValue = z.union([z.string().max(2000), z.number().finite(), z.boolean()])

/**
 * One hit, as the tracker posts it to /api/event and as the raw-hit import reads it
 * (DESIGN.md section 9). The import adds timestamp, ip and userAgent; the browser's come from the request.
 */
export const hitSchema = z.strictObject({
  site: z.string().min(1).max(64),
  name: z.string().trim().min(1).max(120),
  url: z.url({ protocol: /^https?$/, message: 'must be an absolute http(s) URL' }).max(4000),
  referrer: z.string().max(4000).nullish(),
  screenWidth: z.number().int().min(0).max(100_000).nullish(),
  props: z
    .record(z.string().min(1).max(200), propValue)
    .refine((p) => Object.keys(p).length <= 30, 'at most 30 properties')
    .nullish(),
  revenue: z
    .strictObject({
      amount: z.union([z.string().regex(/^-?\d{1,14}(\.\d{1,4})?$/, 'must be a decimal amount'), z.number().finite()]),
      currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code like EUR'),
    })
    .nullish(),
  click: z
    .strictObject({
      selector: shortText(500).optional(),
      text: shortText(500).optional(),
      tag: shortText(40).optional(),
      href: shortText(4000).optional(),
      interactive: z.boolean().optional(),
      dead: z.boolean().optional(),
    })
    .optional(),
  error: z
    .strictObject({
      name: shortText(200).optional(),
      message: shortText(2000),
      stack: shortText(8000).optional(),
      source: shortText(4000).optional(),
      line: z.number().int().nonnegative().optional(),
    })
    .optional(),
  vital: z
    .strictObject({
      name: z.enum(['LCP', 'INP', 'CLS', 'FCP', 'TTFB']),
      value: z.number().finite().nonnegative(),
      rating: z.enum(['good', 'needs-improvement', 'poor']).optional(),
      attribution: z.record(z.string(), z.union([z.string().max(1000), z.number(), z.boolean(), z.null()])).optional(),
    })
    .optional(),
  engagement: z
    .strictObject({ ms: z.number().int().min(0).max(86_400_000), scroll: z.number().int().min(0).max(100) })
    .optional(),
  form: z.strictObject({ selector: shortText(500).optional(), action: shortText(4000).optional() }).optional(),
  // import only
  timestamp: z.iso.datetime({ offset: true }).optional(),
  ip: z.union([z.ipv4(), z.ipv6()]).optional(),
  userAgent: z.string().max(1000).optional(),
})

export type Hit = z.infer<typeof hitSchema>

/** The kind a hit's name implies, before the link rules (outbound, download, affiliate) refine clicks. */
export function kindOfName(name: string): EventKind {
  return (COLLECTOR_KINDS as readonly string[]).includes(name) ? (name as EventKind) : 'custom'
}

/** Each collector kind must carry its fields. */
export function missingKindField(hit: Hit): string | null {
  const required: Partial<Record<EventKind, keyof Hit>> = { click: 'click', error: 'error', vital: 'vital', engagement: 'engagement' }
  const field = required[kindOfName(hit.name)]
  return field && !hit[field] ? `${field}: required for a ${hit.name} event` : null
}
