/** `@upstash/redis` deserializes JSON values on read; records are always objects. */
export const asRecord = <T>(value: unknown): T | null => (value && typeof value === 'object' ? (value as T) : null)

/** A string value as read, or null (a missing key, or a value that was not a string). */
export const asString = (value: unknown): string | null => (typeof value === 'string' ? value : null)
