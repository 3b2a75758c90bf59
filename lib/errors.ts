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

/** `site_id: expected a string` from the first zod issue. */
export function describeZodError(error: z.ZodError, where: 'query' | 'body'): string {
  const issue = error.issues[0]
  const path = issue.path.join('.')
  if (issue.code === 'unrecognized_keys') {
    return `${path ? `${path}: ` : ''}unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
  }
  return `${path || where}: ${issue.message}`
}
