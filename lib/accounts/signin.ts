import { ApiError } from '../errors'
import { parseUserAgent } from '../ingest/enrich'
import type { Repositories } from '../repositories'
import type { Services } from '../services'
import { randomString, sha256Hex } from './keys'
import type { SessionRecord } from './sessions-repository'

export type { SessionRecord }

/**
 * Signing in to the web application: a one-time link sent by e-mail (used once, within 15
 * minutes) opens a browser session. The session's id travels in a cookie signed with the server
 * secret; the session itself lives in the key/value store, so ending it ends it everywhere.
 */

export const SIGN_IN_LINK_TTL_SECONDS = 15 * 60
export const SESSION_TTL_SECONDS = 30 * 24 * 3600
export const SIGN_IN_PATH = '/app/signin/link'

/** A new link for `email`, valid for 15 minutes and one use: the banner, `admin login` and the e-mail. */
export async function mintSignInLink(repositories: Pick<Repositories, 'sessions'>, email: string, baseUrl: string, now: Date) {
  const token = randomString(43)
  await repositories.sessions.saveLink(await sha256Hex(token), { email, createdAt: now.toISOString() }, SIGN_IN_LINK_TTL_SECONDS)
  return `${baseUrl.replace(/\/$/, '')}${SIGN_IN_PATH}?token=${token}`
}

/**
 * E-mails a sign-in link, within the budgets per address and per client address (429 past
 * them, with Retry-After). The answer is the same whether or not the address is known.
 */
export async function requestSignInLink(
  services: Pick<Services, 'repositories' | 'limiter' | 'mailer' | 'now'>,
  input: { email: string; clientAddress: string; baseUrl: string },
) {
  if (!services.mailer) throw new ApiError(503, 'this deployment cannot send e-mail; ask an administrator for a link (admin login --email)')
  for (const [limitClass, identifier] of [
    ['signinClient', input.clientAddress],
    ['signinEmail', input.email],
  ] as const) {
    const result = await services.limiter.limit(limitClass, identifier)
    if (!result.success) {
      const seconds = Math.ceil((result.retryAfterMs ?? result.reset - Date.now()) / 1000)
      throw new ApiError(
        429,
        `too many sign-in links asked for ${limitClass === 'signinEmail' ? 'this address' : 'from this network address'}; try again in ${Math.ceil(seconds / 60)} minutes`,
        {
          'Retry-After': String(Math.max(1, seconds)),
        },
      )
    }
  }
  const link = await mintSignInLink(services.repositories, input.email, input.baseUrl, services.now())
  await services.mailer.send({
    to: [input.email],
    subject: 'Your sign-in link',
    text: [
      'Open this link to sign in. It works once, within 15 minutes:',
      '',
      link,
      '',
      'If you did not ask for it, ignore this message: nobody can sign in without it.',
    ].join('\n'),
  })
}

const usedOrExpired = () => new ApiError(400, 'this sign-in link was already used or has expired; ask for a new one')

/** Whom an unused link signs in, without using it (the confirmation page); 400 for a used or expired one. */
export async function signInLinkAddress(repositories: Pick<Repositories, 'sessions'>, token: string) {
  const link = token ? await repositories.sessions.peekLink(await sha256Hex(token)) : null
  if (!link) throw usedOrExpired()
  return link.email
}

/** Uses the link (once) and opens a session for its address. */
export async function redeemSignInLink(
  repositories: Pick<Repositories, 'sessions'>,
  token: string,
  userAgent: string,
  now: Date,
): Promise<SessionRecord> {
  const link = token ? await repositories.sessions.takeLink(await sha256Hex(token)) : null
  if (!link || now.getTime() - Date.parse(link.createdAt) > SIGN_IN_LINK_TTL_SECONDS * 1000) throw usedOrExpired()
  const session: SessionRecord = {
    id: randomString(32),
    email: link.email,
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + SESSION_TTL_SECONDS * 1000).toISOString(),
    userAgent: userAgent.slice(0, 200),
  }
  await repositories.sessions.saveSession(session, SESSION_TTL_SECONDS)
  return session
}

/** The live session of that id, or null. */
export async function findSession(repositories: Pick<Repositories, 'sessions'>, id: string, now: Date) {
  const session = await repositories.sessions.session(id)
  return session && Date.parse(session.expiresAt) > now.getTime() ? session : null
}

/** An address's live sessions, newest first, each with its browser named ("Chrome 131 on Linux"). */
export async function listSessions(repositories: Pick<Repositories, 'sessions'>, email: string, now: Date) {
  const sessions = await repositories.sessions.sessionsOf(email)
  return sessions
    .filter((s) => Date.parse(s.expiresAt) > now.getTime())
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
    .map((s) => ({ ...s, browser: describeBrowser(s.userAgent) }))
}

function describeBrowser(userAgent: string) {
  const { browser, browserVersion, os } = parseUserAgent(userAgent)
  if (!browser) return userAgent || 'an unknown browser'
  return `${browser}${browserVersion ? ` ${browserVersion}` : ''}${os ? ` on ${os}` : ''}`
}

/** Ends one of the address's sessions; 404 for a session of someone else or none. */
export async function endSession(repositories: Pick<Repositories, 'sessions'>, email: string, id: string) {
  const session = await repositories.sessions.session(id)
  if (!session || session.email !== email) throw new ApiError(404, 'session not found')
  await repositories.sessions.deleteSession(session)
}

const secrets = new WeakMap<object, Promise<string>>()

/**
 * The secret that signs session cookies: SERVER_SECRET when set, otherwise one made at random on
 * the first start and kept in the key/value store, so sessions survive a restart.
 */
export function serverSecret(services: Pick<Services, 'repositories' | 'serverSecret'>): Promise<string> {
  if (services.serverSecret) return Promise.resolve(services.serverSecret)
  let secret = secrets.get(services.repositories)
  if (!secret) {
    secret = services.repositories.sessions.serverSecret(`sk_${randomString(48)}`)
    secret.catch(() => secrets.delete(services.repositories))
    secrets.set(services.repositories, secret)
  }
  return secret
}
