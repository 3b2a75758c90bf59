/**
 * Milliseconds a `Retry-After` header asks to wait: delay-seconds or an HTTP date (RFC 9110,
 * 10.2.3), measured from `nowMs`; null when there is none or it cannot be read.
 */
export function retryAfterMs(header: string | null, nowMs: number): number | null {
  if (!header?.trim()) return null
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const at = Date.parse(header)
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs)
}
