import { nodeCrypto, randomString } from '../core/crypto'
import type { SaltsRepository } from './salts-repository'
import type { AcceptedHit } from './screening'

/** A hit with its visitor: a hash of the site's daily salt, the site, the address and the user agent. */
export interface IdentifiedHit extends AcceptedHit {
  readonly visitorId: string
}

const first8 = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0).toString()
// Node's synchronous hash is ~100x cheaper per call than WebCrypto's thread-pool round trip; Workers use WebCrypto
const node = nodeCrypto
const nodeHash64 = node?.hash
  ? (text: string) => BigInt(`0x${node.hash!('sha256', text, 'hex').slice(0, 16)}`).toString()
  : node && ((text: string) => first8(node.createHash('sha256').update(text).digest()))

/** The first 8 bytes of SHA-256, as the decimal string of a ClickHouse UInt64. */
export async function hash64(text: string): Promise<string> {
  if (nodeHash64) return nodeHash64(text)
  return first8(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))))
}

/** hash64 of each text, with one wait for them all (Node hashes synchronously). */
export async function hash64Many(texts: string[]): Promise<string[]> {
  if (nodeHash64) return texts.map(nodeHash64)
  return Promise.all(texts.map(hash64))
}

const dayFormatters = new Map<string, Intl.DateTimeFormat>()
const days = new Map<string, string>()
/**
 * The site-local calendar day of an instant, YYYY-MM-DD. Every zone's offset is a multiple of
 * 15 minutes, so the day is the same throughout each quarter hour: cached by that.
 */
export function localDay(date: Date, timezone: string): string {
  const key = `${timezone}|${Math.floor(date.getTime() / 900_000)}`
  let day = days.get(key)
  if (day === undefined) {
    let f = dayFormatters.get(timezone)
    if (!f) {
      f = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' })
      dayFormatters.set(timezone, f)
    }
    if (days.size > 100_000) days.clear()
    day = f.format(date)
    days.set(key, day)
  }
  return day
}

/** Each site's salt of a site-local day, from the store once per process (see SaltsRepository.daily). */
export class DailySalts {
  private readonly salts = new Map<string, Promise<string>>()

  constructor(private readonly repository: SaltsRepository) {}

  of(siteId: string, day: string): Promise<string> {
    const key = `${siteId}:${day}`
    let salt = this.salts.get(key)
    if (!salt) {
      if (this.salts.size > 100_000) this.salts.clear()
      salt = this.repository.daily(siteId, day, `s_${randomString(32)}`)
      salt.catch(() => this.salts.delete(key))
      this.salts.set(key, salt)
    }
    return salt
  }
}

/** Each hit with its visitor id: the salts of the batch's days are each awaited once, then one hash a hit. */
export async function identify(hits: readonly AcceptedHit[], salts: DailySalts): Promise<IdentifiedHit[]> {
  const saltOfHit = hits.map((h) => salts.of(h.site.id, localDay(new Date(h.at), h.site.timezone)))
  // a settled promise is read through this map, without another wait per hit
  const settled = new Map(await Promise.all([...new Set(saltOfHit)].map(async (salt) => [salt, await salt] as const)))
  const ids = await hash64Many(hits.map((h, i) => `${settled.get(saltOfHit[i])}|${h.site.id}|${h.item.ip}|${h.item.userAgent}`))
  // a literal rather than a spread, which costs more than a microsecond a hit
  return hits.map((h, i) => ({
    index: h.index,
    item: h.item,
    site: h.site,
    at: h.at,
    url: h.url,
    pathname: h.pathname,
    kind: h.kind,
    visitorId: ids[i],
  }))
}
