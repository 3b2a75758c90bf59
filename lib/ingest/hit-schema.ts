import { z } from 'zod'
import { kindOfName } from './hit'

/*
 * The rules of a hit as a zod schema: the raw-hit import's line, and the browser's POST to
 * /api/event (the same without timestamp, ip and userAgent, which come from the request).
 * The collector checks hits by hand for speed (hit.ts); this schema documents the format in the
 * OpenAPI document, and tests/unit/hit.test.ts holds the hand-written check to it.
 */
const shortText = (max: number) => z.string().max(max)
const fraction = z.number().finite().min(0).max(1)
const documentSide = z.number().int().min(1).max(1_000_000)
const propValue = z.union([z.string().max(2000), z.number().finite(), z.boolean()])
const hitFields = z.strictObject({
  site: z.string().min(1).max(64),
  name: z.string().trim().min(1).max(120),
  url: z.url({ protocol: /^https?$/ }).max(4000),
  referrer: z.string().max(4000).nullish(),
  screenWidth: z.number().int().min(0).max(100_000).nullish(),
  props: z
    .record(z.string().min(1).max(200), propValue)
    .refine((p) => Object.keys(p).length <= 30)
    .nullish(),
  revenue: z
    .strictObject({
      amount: z.union([z.string().regex(/^-?\d{1,14}(\.\d{1,4})?$/), z.number().finite()]),
      currency: z.string().regex(/^[A-Z]{3}$/),
    })
    .nullish(),
  interactive: z
    .boolean()
    .optional()
    .describe(
      'custom events only: false for an event the visitor did not cause, which leaves a visit of one pageview a bounce; true by default',
    ),
  click: z
    .strictObject({
      selector: shortText(500).optional(),
      text: shortText(500).optional(),
      tag: shortText(40).optional(),
      href: shortText(4000).optional(),
      interactive: z.boolean().optional(),
      dead: z.boolean().optional(),
      rage: z.boolean().optional(),
      x: fraction.optional(),
      y: fraction.optional(),
      docWidth: documentSide.optional(),
      docHeight: documentSide.optional(),
    })
    .refine((c) => new Set([c.x, c.y, c.docWidth, c.docHeight].map((v) => v === undefined)).size === 1, {
      message: 'x, y, docWidth and docHeight come together',
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
  engagement: z.strictObject({ ms: z.number().int().min(0).max(86_400_000), scroll: z.number().int().min(0).max(100) }).optional(),
  form: z.strictObject({ selector: shortText(500).optional(), action: shortText(4000).optional() }).optional(),
  timestamp: z.iso.datetime({ offset: true }).optional(),
  ip: z.union([z.ipv4(), z.ipv6()]).optional(),
  userAgent: z.string().max(1000).optional(),
})
const browserFields = hitFields.omit({ timestamp: true, ip: true, userAgent: true })
/** `interactive` tells custom events apart; on a pageview or a collector kind it means nothing, and is refused. */
const interactiveOnCustomEvents = <Hit extends z.infer<typeof browserFields>>(schema: z.ZodType<Hit>) =>
  schema.refine((hit) => hit.interactive === undefined || kindOfName(hit.name) === 'custom', {
    path: ['interactive'],
    message: 'only on a custom event',
  })
export const importHitSchema = interactiveOnCustomEvents(hitFields)
export const browserHitSchema = interactiveOnCustomEvents(browserFields)

/*
 * Plausible's Events API payload (lib/ingest/plausible-hit.ts checks it by hand): each field in
 * its short or its long spelling, not both. Documents the format in the OpenAPI document.
 */
const plausibleRevenue = z.strictObject({ amount: z.union([z.string(), z.number()]), currency: z.string().length(3) })
const plausibleProps = z.union([z.record(z.string(), propValue), z.string().describe('the props object as JSON text')])
const plausibleFlag = z.union([z.boolean(), z.literal(0), z.literal(1)])
export const plausibleEventSchema = z
  .object({
    n: z.string().max(120).describe('event name: pageview, engagement or a custom event name'),
    name: z.string().max(120),
    u: z
      .url({ protocol: /^https?$/ })
      .max(4000)
      .describe("the page's URL"),
    url: z.url({ protocol: /^https?$/ }).max(4000),
    d: z.string().describe("the site's domain, or a comma-separated list of domains (the hit is recorded for each)"),
    domain: z.string(),
    r: z.string().max(4000).nullable().describe('referrer'),
    referrer: z.string().max(4000).nullable(),
    p: plausibleProps.describe('custom properties'),
    props: plausibleProps,
    $: plausibleRevenue.describe('revenue: amount and ISO 4217 currency'),
    revenue: plausibleRevenue,
    i: plausibleFlag.describe(
      'interactive: false (or 0) for a custom event that leaves a visit of one pageview a bounce; true by default; no effect on pageviews and engagement events',
    ),
    interactive: plausibleFlag,
    h: plausibleFlag.describe('hash routing: the path includes the #/ route'),
    w: z.number().int().min(0).max(100_000).describe('screen width'),
    sd: z.number().int().min(-1).max(1000).describe('engagement: scroll depth in percent'),
    e: z.number().int().min(0).max(86_400_000).describe('engagement: engaged milliseconds since the last report'),
    v: z.union([z.string(), z.number()]).describe("the tracker's version"),
  })
  .partial()
  .describe("Plausible's Events API payload: names the site by its domain")
export const eventBodySchema = z.union([browserHitSchema, plausibleEventSchema])
