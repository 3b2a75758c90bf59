import { z } from 'zod'
import { UserError } from '../core/errors'

/**
 * The Node server's environment, in one schema: the server parses it, and `docs/configuration.md`
 * is generated from it (`npm run docs:config`; a test keeps the page current).
 */

export const logLevelSchema = z
  .enum(['silent', 'error', 'info', 'debug'])
  .describe(
    '`info`: one JSON line per request and every internal error, on stderr; `debug`: those and a line for every hit the collector drops, with the reason; `error`: internal errors only; `silent`: nothing',
  )
export type LogLevel = z.infer<typeof logLevelSchema>

const port = z.coerce
  .number({ message: 'must be a port number' })
  .int({ message: 'must be a port number' })
  .min(0, { message: 'must be a port number' })
  .max(65535, { message: 'must be a port number from 0 to 65535' })
const flag = z.enum(['0', '1'], { message: 'must be 0 or 1' })

/** Shared by both homes' schemas (lib/runtime/worker.ts). */
/** How long one key/value call may take before it is an outage: Redis over TCP and Upstash over REST alike. */
export const kvTimeoutMs = z.coerce
  .number({ message: 'must be milliseconds' })
  .int({ message: 'must be whole milliseconds' })
  .min(100, { message: 'must be at least 100' })
  .max(60_000, { message: 'must be at most 60000' })
  .default(2000)
  .describe(
    'how long one call to the key/value store (Redis over `REDIS_URL`, Upstash over REST) may take: past it, or when the store refuses connections, requests that need it answer 503 with Retry-After',
  )

/** Shared by both homes' schemas: the time limit of one read on the engine (lib/storage/clickhouse/execute.ts). */
export const queryTimeLimitMs = z.coerce
  .number({ message: 'must be milliseconds' })
  .int({ message: 'must be whole milliseconds' })
  .min(100, { message: 'must be at least 100' })
  .max(600_000, { message: 'must be at most 600000' })
  .default(10_000)
  .describe(
    'how long one read may run on ClickHouse: past it the engine stops it and the request answers 400 naming the limit (background work, such as the rollup builds and imports, is not bounded)',
  )

export const cruxApiKey = z
  .string()
  .optional()
  .describe(
    'a Google Cloud API key allowed to use the Chrome UX Report API: `crux=1` on `GET /api/v1/vitals` adds its field data (without it, `crux` says no key is configured); a secret, never logged or answered',
  )
export const cruxApiUrl = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
  .default('https://chromeuxreport.googleapis.com')
  .describe(
    'where the Chrome UX Report API is asked: a local stand-in for tests or a proxy (with `OUTBOUND_ALLOW_PRIVATE=1` for a private address)',
  )

/** Shared by both homes' schemas: the backlink data provider (lib/backlinks/provider.ts). */
export const backlinksApiKey = z
  .string()
  .optional()
  .describe(
    'DataForSEO API credentials as `login:password` (the API login and API password of its dashboard): `GET /api/v1/backlinks` adds the links no visitor came through and the domain authority (without it, `authority` says no provider is configured); a secret, never logged or answered',
  )
export const backlinksApiUrl = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
  .default('https://api.dataforseo.com')
  .describe(
    'where the DataForSEO Backlinks API is asked: a local stand-in for tests or a proxy (with `OUTBOUND_ALLOW_PRIVATE=1` for a private address)',
  )
/** A base URL of a Google endpoint, with its real default: a self-hoster's proxy or a test's stand-in may replace it. */
const googleUrl = (name: string, real: string) =>
  z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
    .default(real)
    .describe(
      `where ${name} is (default the real one); a proxy or a local stand-in, with \`OUTBOUND_ALLOW_PRIVATE=1\` for a private address`,
    )

/** The Google connection (GA4 today, Search Console next), shared by both homes' schemas. */
export const googleEnv = {
  GOOGLE_CLIENT_ID: z
    .string()
    .optional()
    .describe(
      'the OAuth 2.0 client id of a Google Cloud "Web application" client: sites can connect Google Analytics 4 (without it, the ga4 read\'s `connectUrl` is null and says what to configure); its authorized redirect URI is `PUBLIC_URL` + `/oauth/google/callback`',
    ),
  GOOGLE_CLIENT_SECRET: z.string().optional().describe('the secret of that client; a secret, never logged or answered'),
  SERVER_SECRET: z
    .string()
    .min(32, { message: 'must be at least 32 characters (for example `openssl rand -base64 32`)' })
    .optional()
    .describe(
      "the server's own secret, at least 32 characters: signs the web application's session cookies, encrypts the providers' refresh tokens at rest (AES-GCM) and signs OAuth states. Required once `GOOGLE_CLIENT_ID` is set (changing it then disconnects every Google connection); without it and without Google, a random one is made on the first start and kept in the key/value store",
    ),
  GOOGLE_AUTH_URL: googleUrl("Google's OAuth 2.0 authorization page", 'https://accounts.google.com/o/oauth2/v2/auth'),
  GOOGLE_TOKEN_URL: googleUrl("Google's OAuth 2.0 token endpoint", 'https://oauth2.googleapis.com/token'),
  GOOGLE_REVOKE_URL: googleUrl("Google's OAuth 2.0 revocation endpoint", 'https://oauth2.googleapis.com/revoke'),
  GOOGLE_ANALYTICS_ADMIN_URL: googleUrl('the Google Analytics Admin API', 'https://analyticsadmin.googleapis.com'),
  GOOGLE_ANALYTICS_DATA_URL: googleUrl('the Google Analytics Data API', 'https://analyticsdata.googleapis.com'),
  GOOGLE_SEARCH_CONSOLE_URL: googleUrl('the Search Console API', 'https://searchconsole.googleapis.com'),
}

/** Shared by both homes' schemas: the plan of every organization of the deployment. */
export const planSetting = z
  .enum(['unlimited', 'free', 'pro', 'business', 'per-organization'], {
    message: 'must be unlimited, free, pro, business or per-organization',
  })
  .default('unlimited')
  .describe(
    "the plan every organization of this deployment is on (lib/accounts/plans.ts): `unlimited` sets no limit on events, sites or team members; `per-organization` reads each organization's own plan, as a billed service keeps it",
  )

/** The deployment's plan for Services.plan: none where each organization's own applies. */
export const deploymentPlan = (setting: z.infer<typeof planSetting>) => (setting === 'per-organization' ? undefined : setting)

export const nodeEnvSchema = z.object({
  PORT: port.default(8787).describe('where the API listens; `0` picks a free port'),
  HOST: z
    .string()
    .default('127.0.0.1')
    .describe('the address the API listens on: this machine only by default; `0.0.0.0` (or `::`) to be reachable from other machines'),
  LOCAL_PORT: port
    .optional()
    .describe(
      'port of the local-only endpoints (default `PORT + 1`, on 127.0.0.1), which CLIs and `wrangler dev` use to reach the embedded stores',
    ),
  PUBLIC_URL: z
    .url()
    .optional()
    .describe(
      "the origin people open the service at, which every link it makes starts with: sign-in and invitation e-mails, shared links, tracking snippets, the OpenAPI document. Without it the Node server uses the address it listens on (`http://127.0.0.1:8787` by default), never a request's `Host`; on Workers without it the web application makes no sign-in or shared link, and API answers use the request's origin. An `https` origin also sends `Strict-Transport-Security` on `/app` and `/share`",
    ),
  DATA_DIR: z.string().optional().describe('where the embedded stores live (default `./.data`)'),
  LOG_LEVEL: logLevelSchema.default('info'),
  CLICKHOUSE_URL: z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://clickhouse.internal:8443' })
    .optional()
    .describe('use a ClickHouse server over HTTP instead of the embedded engine'),
  CLICKHOUSE_USER: z.string().optional().describe('ClickHouse user (default `default`)'),
  CLICKHOUSE_PASSWORD: z.string().optional().describe('ClickHouse password'),
  CLICKHOUSE_DATABASE: z.string().optional().describe("ClickHouse database (default: the user's default)"),
  CLICKHOUSE_CLUSTER: z.string().optional().describe('`npm run migrate` creates tables `ON CLUSTER` with `Replicated*` engines'),
  REDIS_URL: z
    .url()
    .optional()
    .describe('use Redis over TCP (`redis://` or `rediss://`) for keys, sites, settings, visits and rate limits'),
  UPSTASH_REDIS_REST_URL: z.url().optional().describe('use Upstash over REST instead (with the token below)'),
  UPSTASH_REDIS_REST_TOKEN: z.string().optional().describe('the Upstash REST token'),
  REDIS_PREFIX: z
    .string()
    .optional()
    .describe('a prefix for every key written to Redis or Upstash, so installations (or test runs) can share one database'),
  OUTBOUND_ALLOW_PRIVATE: flag
    .default('0')
    .describe("`1` lets the server's own outbound requests reach private, loopback and link-local addresses"),
  CRAWLER: flag.default('1').describe('`0` turns the crawler off (change detection): nothing is crawled and publish pings answer 503'),
  CRAWL_HOST_INTERVAL_MS: z.coerce
    .number({ message: 'must be a number of milliseconds' })
    .int()
    .min(0)
    .max(60_000)
    .default(1000)
    .describe("least time between two of the crawler's requests to one host, in milliseconds; `0` only against your own test site"),
  CRAWL_ORIGIN: z
    .url()
    .optional()
    .describe(
      'crawl every site, and check its install, from this origin instead of `https://<domain>`: a local copy of a site under test (with `OUTBOUND_ALLOW_PRIVATE=1` for a private address)',
    ),
  KV_TIMEOUT_MS: kvTimeoutMs,
  QUERY_TIME_LIMIT_MS: queryTimeLimitMs,
  REQUEST_TIMEOUT_MS: z.coerce
    .number({ message: 'must be milliseconds' })
    .int({ message: 'must be whole milliseconds' })
    .min(1000, { message: 'must be at least 1000' })
    .max(600_000, { message: 'must be at most 600000' })
    .default(30_000)
    .describe('how long a request may take to arrive, headers and body: a client that sends slower is answered 408 and disconnected'),
  METRICS_TOKEN: z
    .string()
    .min(16, { message: 'must be at least 16 characters' })
    .optional()
    .describe(
      'switches on `GET /metrics` (Prometheus text: requests, hits, the journal, ClickHouse, the key/value store, jobs) for callers sending it as `Authorization: Bearer <token>`; unset, `/metrics` answers 404; a secret, never logged',
    ),
  TRUST_PROXY: flag.default('0').describe('`1` behind your own reverse proxy: take the client address from `X-Forwarded-For`'),
  DEMO: flag
    .optional()
    .describe(
      '`1` creates the demo organization and site on a first start against a ClickHouse server or Redis too; `0` never; by default only on a first start on the embedded stores',
    ),
  PLAN: planSetting,
  DEMO_LIVE_TRAFFIC: flag
    .default('1')
    .describe('`0` stops the light trickle of live visitors (one every 20 seconds) the demo site gets while the server runs'),
  SKIP_DEMO_TRAFFIC: flag
    .default('0')
    .describe('`1` to create the demo site on first start without its traffic, its website and its live visitors'),
  SMTP_URL: z
    .url()
    .optional()
    .describe(
      'where report and invitation e-mails go (`smtp://user:pass@host:587`); without it they are written as `.eml` files to `DATA_DIR/outbox`',
    ),
  MAIL_FROM: z.string().optional().describe('the sender of those e-mails (default `reports@` the host of `PUBLIC_URL`, or localhost)'),
  CRUX_API_KEY: cruxApiKey,
  CRUX_API_URL: cruxApiUrl,
  BACKLINKS_API_KEY: backlinksApiKey,
  BACKLINKS_API_URL: backlinksApiUrl,
  ...googleEnv,
})
export type NodeConfig = z.infer<typeof nodeEnvSchema>

/** Parses an environment (an empty variable means unset), or fails with one sentence naming the variable. */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '' && value !== undefined))
  const parsed = schema.safeParse(set)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  const name = issue.path.join('.')
  const given = set[name]
  throw new UserError(`${name} ${given === undefined ? 'is missing' : `is ${JSON.stringify(given)}`}: ${issue.message}`)
}

/**
 * Whether a first start makes the demo: on the embedded stores (a try on one machine) it does; a
 * start against a ClickHouse server or Redis is a production start, which gets no fake data
 * unless DEMO=1 asks for it.
 */
export function demoWanted(env: Pick<NodeConfig, 'DEMO' | 'CLICKHOUSE_URL' | 'REDIS_URL' | 'UPSTASH_REDIS_REST_URL'>): boolean {
  if (env.DEMO !== undefined) return env.DEMO === '1'
  return !env.CLICKHOUSE_URL && !env.REDIS_URL && !env.UPSTASH_REDIS_REST_URL
}
