/**
 * A write refused because it would break what the store keeps unique (a domain taken twice in an
 * organization). The API answers it as 409 with this message (functions/invoke.ts).
 */
export class ConflictError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConflictError'
  }
}

/**
 * A store that does not answer in time or refuses connections: an outage, not a bug. The API
 * answers it as 503 with Retry-After (functions/invoke.ts), so a client knows to come back.
 */
export class StoreUnavailableError extends Error {
  constructor(
    readonly store: 'key/value store' | 'ClickHouse' | 'event journal',
    readonly retryAfterSeconds = 5,
    options?: { cause?: unknown },
  ) {
    super(`${store} is unavailable; retry in ${retryAfterSeconds} s`, options)
    this.name = 'StoreUnavailableError'
  }
}

/** The outage behind a failure, when one is: libraries that call the store may wrap its error as their own's cause. */
export function storeOutageIn(err: unknown): StoreUnavailableError | undefined {
  const seen = new Set<unknown>()
  for (let at = err; at && typeof at === 'object' && !seen.has(at); at = (at as { cause?: unknown }).cause) {
    if (at instanceof StoreUnavailableError) return at
    seen.add(at)
  }
  return undefined
}

/**
 * A failure for want of disk space: the file system's (ENOSPC, EDQUOT) or the engine's own
 * (NOT_ENOUGH_SPACE, code 243, when it cannot reserve room for a part). Nothing the caller did
 * wrong: it clears when space returns.
 */
export function isOutOfSpace(err: unknown): boolean {
  const e = err as { code?: unknown; clickhouseCode?: unknown; type?: unknown; message?: unknown; cause?: unknown } | null
  if (!e || typeof e !== 'object') return false
  // the embedded engine's errors carry clickhouseCode; @clickhouse/client's carry the code as text and its name as type
  if (e.code === 'ENOSPC' || e.code === 'EDQUOT' || e.clickhouseCode === 243 || e.code === '243' || e.type === 'NOT_ENOUGH_SPACE')
    return true
  if (typeof e.message === 'string' && /NOT_ENOUGH_SPACE|No space left on device|ENOSPC/.test(e.message)) return true
  return e.cause !== undefined && e.cause !== err && isOutOfSpace(e.cause)
}
