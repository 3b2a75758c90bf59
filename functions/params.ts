import { z } from 'zod'
import { RANGES } from '../lib/reports/dimensions'

/** Query-string building blocks shared by endpoint declarations. */
export const flagParam = z.enum(['0', '1']).transform((v) => v === '1')
export const rangeParam = z.enum(RANGES)
export const uuidParam = z.uuid({ message: 'must be a UUID' })

const MAX_UINT64 = BigInt('18446744073709551615')
/** A 64-bit unsigned id in decimal, as answers give them (error fingerprints, visitor ids). */
export const uint64Param = (what: string) =>
  z.string().refine((v) => /^\d{1,20}$/.test(v) && BigInt(v) <= MAX_UINT64, `must be ${what} (a 64-bit unsigned decimal)`)

/** Edits between two names (insert, delete, replace, swap two neighbours): how a typo is told from a name. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[a.length][b.length]
}

/** The known name a mistyped one most likely meant: at most two edits away, and fewer than half its letters. */
export function nearestName(name: string, known: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  const lower = name.toLowerCase()
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase())
    if (distance < bestDistance && distance <= 2 && distance < candidate.length / 2) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/**
 * The first parameter `given` holds that the endpoint does not take, as the 400 naming it, with
 * the nearest known name: a mistyped parameter must not be ignored and answered as if absent.
 */
export function unknownParameterMessage(given: Iterable<string>, known: ReadonlySet<string>): string | null {
  for (const name of given) {
    if (known.has(name)) continue
    const nearest = nearestName(name, known)
    const label = name.length > 64 ? `${name.slice(0, 64)}…` : name
    if (nearest) return `${label}: unknown parameter; did you mean ${nearest}?`
    return `${label}: unknown parameter; this endpoint takes ${known.size ? [...known].sort().join(', ') : 'no parameters'}`
  }
  return null
}
