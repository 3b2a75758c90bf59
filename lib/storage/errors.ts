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
    readonly store: 'key/value store' | 'ClickHouse',
    readonly retryAfterSeconds = 5,
    options?: { cause?: unknown },
  ) {
    super(`${store} is unavailable; retry in ${retryAfterSeconds} s`, options)
    this.name = 'StoreUnavailableError'
  }
}
