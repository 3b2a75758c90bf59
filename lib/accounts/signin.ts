import type { DomainServices, DomainRepositories } from '../sites/domain-services'
import { ApiError } from '../core/errors'
import { parseUserAgent } from '../ingest/enrich'
import { linkOrigin } from '../network/origin'
import { randomString, sha256Hex } from '../core/crypto'
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

const linkTo = (origin: string, token: string) => `${origin.replace(/\/$/, '')}${SIGN_IN_PATH}?token=${token}`

/** A new link for `email`, valid for 15 minutes and one use: the banner and `admin login`. */
export async function mintSignInLink(repositories: Pick<DomainRepositories, 'sessions'>, email: string, baseUrl: string, now: Date) {
  const token = randomString(43)
  await repositories.sessions.saveLink(await sha256Hex(token), { email, createdAt: now.toISOString() }, SIGN_IN_LINK_TTL_SECONDS)
  return linkTo(baseUrl, token)
}

/**
 * E-mails a sign-in link to `email`, built on the configured origin (never the request's). A
 * client address (its /64 for IPv6) asks for at most 5 links in 15 minutes (`signinClient`): 429
 * past that, with Retry-After. An address holds at most one unused link: asking again while it
 * does sends nothing, and the caller answers the same as when it sent one, so the form tells
 * nobody whether a link was out, nor whether the address is known. Nobody else's asking ever
 * refuses the owner a link: the one they are told to look for is in their mailbox.
 */
export async function requestSignInLink(
  services: Pick<DomainServices, 'repositories' | 'limiter' | 'mailer' | 'now' | 'publicUrl'>,
  input: { email: string; clientAddress: string },
) {
  if (!services.mailer) throw new ApiError(503, 'this deployment cannot send e-mail; ask an administrator for a link (admin login --email)')
  const origin = linkOrigin(services, 'a sign-in link')
  const limited = await services.limiter.limit('signinClient', clientNetwork(input.clientAddress))
  if (!limited.success) {
    const seconds = Math.max(1, Math.ceil((limited.retryAfterMs ?? limited.reset - Date.now()) / 1000))
    throw new ApiError(429, `too many sign-in links asked for from this network address; try again in ${Math.ceil(seconds / 60)} minutes`, {
      'Retry-After': String(seconds),
    })
  }
  const now = services.now()
  const token = randomString(43)
  const tokenHash = await sha256Hex(token)
  const { sessions } = services.repositories
  if (!(await sessions.holdLink(input.email, tokenHash, now, SIGN_IN_LINK_TTL_SECONDS * 1000))) return
  await sessions.saveLink(tokenHash, { email: input.email, createdAt: now.toISOString() }, SIGN_IN_LINK_TTL_SECONDS)
  try {
    await services.mailer.send(signInMail(input.email, linkTo(origin, token)))
  } catch (err) {
    // a link nobody received holds nothing: asking again sends one
    await sessions.takeLink(tokenHash)
    await sessions.releaseLink(input.email, tokenHash)
    throw err
  }
}

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** The sign-in e-mail: HTML with a button-like link, and a plain-text part with the link on a line of its own, to copy whole. */
export function signInMail(email: string, link: string) {
  const lead = 'Open this link to sign in. It works once, within 15 minutes:'
  const ignore = 'If you did not ask for it, ignore this message: nobody can sign in without it.'
  const href = escapeHtml(link)
  return {
    to: [email],
    subject: 'Your sign-in link',
    text: [lead, '', link, '', ignore].join('\n'),
    html: [
      '<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5;color:#1f2328">',
      `<p>${escapeHtml(lead)}</p>`,
      `<p><a href="${href}" style="display:inline-block;padding:8px 16px;background:#0b57d0;color:#fff;border-radius:6px;text-decoration:none">Sign in</a></p>`,
      `<p style="color:#57606a">Or copy this address into your browser:<br><span style="word-break:break-all">${href}</span></p>`,
      `<p style="color:#57606a">${escapeHtml(ignore)}</p>`,
      '</body></html>',
    ].join('\n'),
  }
}

/**
 * Whom the per-client budget counts: the address, or for IPv6 its /64, which one client (a
 * household, a server) holds whole and can pick any address in.
 */
export function clientNetwork(address: string): string {
  const bare = address.replace(/%.*$/, '').toLowerCase()
  if (!bare.includes(':')) return bare
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare)
  if (mapped) return mapped[1]
  const [head, tail, ...more] = bare.split('::')
  if (more.length) return bare
  const groups = (part: string | undefined) => (part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [])
  const front = groups(head)
  const back = groups(tail)
  const full = tail === undefined ? front : [...front, ...Array(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back]
  const prefix = full.slice(0, 4).map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? Number.parseInt(g, 16).toString(16) : null))
  if (full.length !== 8 || prefix.includes(null)) return bare
  return `${prefix.join(':')}::/64`
}

const usedOrExpired = () => new ApiError(400, 'this sign-in link was already used or has expired; ask for a new one')

/** Whom an unused link signs in, without using it (the confirmation page); 400 for a used or expired one. */
export async function signInLinkAddress(repositories: Pick<DomainRepositories, 'sessions'>, token: string) {
  const link = token ? await repositories.sessions.peekLink(await sha256Hex(token)) : null
  if (!link) throw usedOrExpired()
  return link.email
}

/** Uses the link (once) and opens a session for its address. */
export async function redeemSignInLink(
  repositories: Pick<DomainRepositories, 'sessions'>,
  token: string,
  userAgent: string,
  now: Date,
): Promise<SessionRecord> {
  const tokenHash = token ? await sha256Hex(token) : ''
  const link = tokenHash ? await repositories.sessions.takeLink(tokenHash) : null
  // the address may be sent a new link at once: this one is gone, used or expired
  if (link) await repositories.sessions.releaseLink(link.email, tokenHash)
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
export async function findSession(repositories: Pick<DomainRepositories, 'sessions'>, id: string, now: Date) {
  const session = await repositories.sessions.session(id)
  return session && Date.parse(session.expiresAt) > now.getTime() ? session : null
}

/** An address's live sessions, newest first, each with its browser named ("Chrome 131 on Linux"). */
export async function listSessions(repositories: Pick<DomainRepositories, 'sessions'>, email: string, now: Date) {
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
export async function endSession(repositories: Pick<DomainRepositories, 'sessions'>, email: string, id: string) {
  const session = await repositories.sessions.session(id)
  if (!session || session.email !== email) throw new ApiError(404, 'session not found')
  await repositories.sessions.deleteSession(session)
}

const secrets = new WeakMap<object, Promise<string>>()

/**
 * The secret that signs session cookies: SERVER_SECRET when set, otherwise one made at random on
 * the first start and kept in the key/value store, so sessions survive a restart.
 */
export function serverSecret(services: Pick<DomainServices, 'repositories' | 'serverSecret'>): Promise<string> {
  if (services.serverSecret) return Promise.resolve(services.serverSecret)
  let secret = secrets.get(services.repositories)
  if (!secret) {
    secret = services.repositories.sessions.serverSecret(`sk_${randomString(48)}`)
    secret.catch(() => secrets.delete(services.repositories))
    secrets.set(services.repositories, secret)
  }
  return secret
}
