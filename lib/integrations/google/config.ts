import { UserError } from '../../core/errors'

/**
 * How a home reaches Google: its OAuth client, the server secret that encrypts refresh tokens and
 * signs states, and the base URL of every Google endpoint (the real ones by default; a proxy or a
 * test's stand-in may replace them). One connection per site serves GA4 now and Search Console next.
 */
export interface GoogleConfig {
  clientId: string
  /** A secret: sent to the token and revocation endpoints only. */
  clientSecret: string
  /** The server secret (SERVER_SECRET): AES-GCM key material and the state's HMAC key. */
  serverSecret: string
  authUrl: string
  tokenUrl: string
  revokeUrl: string
  adminUrl: string
  dataUrl: string
  searchConsoleUrl: string
}

export interface GoogleEnv {
  GOOGLE_CLIENT_ID?: string
  GOOGLE_CLIENT_SECRET?: string
  SERVER_SECRET?: string
  GOOGLE_AUTH_URL: string
  GOOGLE_TOKEN_URL: string
  GOOGLE_REVOKE_URL: string
  GOOGLE_ANALYTICS_ADMIN_URL: string
  GOOGLE_ANALYTICS_DATA_URL: string
  GOOGLE_SEARCH_CONSOLE_URL: string
}

const base = (url: string) => url.replace(/\/+$/, '')

/** The Google configuration of an environment: none without GOOGLE_CLIENT_ID; a start-up error when it lacks what it needs. */
export function googleConfig(env: GoogleEnv): GoogleConfig | undefined {
  if (!env.GOOGLE_CLIENT_ID) return undefined
  if (!env.GOOGLE_CLIENT_SECRET)
    throw new UserError('GOOGLE_CLIENT_ID is set but GOOGLE_CLIENT_SECRET is not: set both, from the same Google Cloud OAuth client')
  if (!env.SERVER_SECRET)
    throw new UserError(
      'GOOGLE_CLIENT_ID is set but SERVER_SECRET is not: set SERVER_SECRET to a random string of at least 32 characters (it encrypts Google refresh tokens at rest)',
    )
  return {
    clientId: env.GOOGLE_CLIENT_ID,
    clientSecret: env.GOOGLE_CLIENT_SECRET,
    serverSecret: env.SERVER_SECRET,
    authUrl: env.GOOGLE_AUTH_URL,
    tokenUrl: env.GOOGLE_TOKEN_URL,
    revokeUrl: env.GOOGLE_REVOKE_URL,
    adminUrl: base(env.GOOGLE_ANALYTICS_ADMIN_URL),
    dataUrl: base(env.GOOGLE_ANALYTICS_DATA_URL),
    searchConsoleUrl: base(env.GOOGLE_SEARCH_CONSOLE_URL),
  }
}

/** The sentence a ga4 read gives where this server has no Google client. */
export const GOOGLE_NOT_CONFIGURED =
  'this server has no Google OAuth client: set GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET and SERVER_SECRET (see docs/self-hosting.md)'
