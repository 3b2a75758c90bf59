import { z } from 'zod'
import type { Site } from '../sites/sites'
import { type DnsResolver, botVerifier, classifyBot } from './bots'
import { type BotRow, botRow } from './rows'
import { wellFormedInput } from './well-formed'

export const MAX_COLLECT_HITS = 500

/** A server-side hit, with its aliases folded into the canonical names. */
export const collectedHitSchema = z.preprocess(
  (raw) => {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return raw
    const r = raw as Record<string, unknown>
    return {
      path: r.path,
      userAgent: r.userAgent ?? r.user_agent ?? r.ua,
      ip: r.ip ?? r.clientIp,
      referrer: r.referrer ?? r.referer,
      hostname: r.hostname ?? r.host,
      timestamp: r.timestamp,
    }
  },
  z.object({
    path: z.string().min(1).max(2000),
    userAgent: z.string().min(1).max(1000),
    ip: z.union([z.ipv4(), z.ipv6()]).optional(),
    referrer: z.string().max(2000).optional(),
    hostname: z.string().max(253).optional(),
    timestamp: z.iso.datetime({ offset: true }).optional(),
  }),
)

export type CollectedHit = z.infer<typeof collectedHitSchema>

/** How long a collect call waits for crawler verification; checks still running go on to fill the cache. */
export const VERIFICATION_BUDGET_MS = 700

/**
 * Keeps the bot and AI-crawler hits of a server-side batch and drops humans and junk. A bot whose
 * user agent names a crawler that publishes its reverse-DNS domains is verified against them,
 * within VERIFICATION_BUDGET_MS: a hit whose check is not done by then is stored unverified, and
 * the check goes on, so the next hits from that address are verified from the cache.
 */
export async function collectBotHits(
  site: Site,
  raw: unknown[],
  deps: { dns?: DnsResolver; now: () => Date; countryOf?: (ip: string) => Promise<string> },
) {
  const rows: BotRow[] = []
  let dropped = 0
  const verifier = deps.dns && botVerifier(deps.dns)
  let timer: ReturnType<typeof setTimeout> | undefined
  const budget = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), VERIFICATION_BUDGET_MS)))
  const now = deps.now().getTime()
  await Promise.all(
    raw.map(async (candidate) => {
      const parsed = collectedHitSchema.safeParse(wellFormedInput(candidate))
      if (!parsed.success) return void dropped++
      const hit = parsed.data
      const at = hit.timestamp ? new Date(hit.timestamp) : new Date(now)
      if (at.getTime() > now + 5 * 60_000) return void dropped++
      const bot = classifyBot(hit.userAgent)
      if (!bot) return void dropped++
      const check = verifier ? Promise.race([verifier.verify(hit.userAgent, hit.ip), budget]) : false
      const path = hit.path.startsWith('/') ? hit.path : `/${hit.path}`
      const [verified, countryCode] = await Promise.all([check, hit.ip && deps.countryOf ? deps.countryOf(hit.ip) : ''])
      rows.push(
        botRow({
          siteId: site.id,
          at,
          bot,
          verified,
          source: 'server',
          hostname: (hit.hostname ?? site.domain).toLowerCase(),
          pathname: path.split('?')[0],
          referrer: hit.referrer,
          userAgent: hit.userAgent,
          countryCode,
        }),
      )
    }),
  )
  clearTimeout(timer)
  return { rows, dropped }
}
