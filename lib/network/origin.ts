import { ApiError } from '../core/errors'

/**
 * The origin of every link that leaves the server: a sign-in or invitation e-mail, a shared link
 * or an address shown to be copied. It is PUBLIC_URL, or on the Node server without it the address
 * the server listens on (functions/node.ts sets it once it listens); on Workers without PUBLIC_URL
 * there is none. Never the request's Host: anyone can send any Host, and a link built from it would
 * carry a sign-in token or a shared link's secret to whichever host they named.
 */
export function configuredOrigin(services: { publicUrl?: string }): string | undefined {
  return services.publicUrl
}

/** The configured origin for a link that is nothing without it (`what`): a 503 naming PUBLIC_URL where there is none. */
export function linkOrigin(services: { publicUrl?: string }, what: string): string {
  const origin = configuredOrigin(services)
  if (!origin)
    throw new ApiError(
      503,
      `this deployment cannot make ${what}: PUBLIC_URL, the address people open this service at, is not set (an administrator sets it)`,
    )
  return origin
}
