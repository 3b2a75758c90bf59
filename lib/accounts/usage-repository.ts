import type { Redis } from '@upstash/redis'

const usageKey = {
  /** kind -> rows stored in the month. */
  ofMonth: (orgId: string, month: string) => `usage:${orgId}:${month}`,
  /** `<siteId>:<kind>` -> rows stored in the month. */
  bySite: (orgId: string, month: string) => `usage:${orgId}:${month}:sites`,
}

/** What an organization stored in a month, by kind of row, in total and per site. */
export class UsageRepository {
  constructor(private readonly kv: Redis) {}

  /** Counts stored rows, by site and kind, in the organization's usage of a month: one round trip. */
  async add(orgId: string, month: string, bySite: Record<string, Record<string, number>>) {
    const tx = this.kv.pipeline()
    for (const [siteId, counts] of Object.entries(bySite)) {
      for (const [kind, n] of Object.entries(counts)) {
        tx.hincrby(usageKey.ofMonth(orgId, month), kind, n)
        tx.hincrby(usageKey.bySite(orgId, month), `${siteId}:${kind}`, n)
      }
    }
    await tx.exec()
  }

  async get(orgId: string, month: string): Promise<Record<string, number>> {
    const raw = await this.kv.hgetall<Record<string, string>>(usageKey.ofMonth(orgId, month))
    return Object.fromEntries(Object.entries(raw ?? {}).map(([kind, n]) => [kind, Number(n)]))
  }

  /** The month's usage per site and kind. */
  async bySite(orgId: string, month: string): Promise<Record<string, Record<string, number>>> {
    const raw = await this.kv.hgetall<Record<string, string>>(usageKey.bySite(orgId, month))
    const bySite: Record<string, Record<string, number>> = {}
    for (const [field, n] of Object.entries(raw ?? {})) {
      const at = field.lastIndexOf(':')
      const siteId = field.slice(0, at)
      bySite[siteId] ??= {}
      bySite[siteId][field.slice(at + 1)] = Number(n)
    }
    return bySite
  }
}
