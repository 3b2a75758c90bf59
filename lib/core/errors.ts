import type { z } from 'zod'

/** The one error type of the service. Every error response is `{"error": message}` with `status`. */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 503,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

/** `site_id: required` or `range: Invalid option...` from the first zod issue; `input` tells a missing value from a wrong one. */
export function describeZodError(error: z.ZodError, where: 'query' | 'body', input?: unknown): string {
  const issue = error.issues[0]
  const path = issue.path.join('.')
  // zod's own wording for a missing value ("Invalid input: expected string, received undefined");
  // a schema's own message (a hint of what to send) is kept
  if (path && issue.message.startsWith('Invalid ') && valueAt(input, issue.path) === undefined) return `${path}: required`
  if (issue.code === 'unrecognized_keys') {
    return `${path ? `${path}: ` : ''}unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
  }
  return `${path || where}: ${issue.message}`
}

/** The value at a zod issue's path in the input, undefined when any step is missing. */
function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let value = input
  for (const step of path) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<PropertyKey, unknown>)[step]
  }
  return value
}

/** A failure the user can fix, told in one sentence: CLIs and the server print it without a stack. */
export class UserError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'UserError'
  }
}
