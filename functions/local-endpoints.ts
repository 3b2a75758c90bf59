import { timingSafeEqual } from 'node:crypto'
import { Hono } from 'hono'
import type { EmbeddedClickHouse } from '../lib/storage/clickhouse/chdb'
import { type RawRedis, encodeUpstashResponse, isUpstashError, runUpstashRequest } from '../lib/storage/kv/raw'

function sameSecret(a: string, b: string) {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** The password a ClickHouse HTTP client sent: basic auth, or X-ClickHouse-Key, or ?password=. */
function clickhousePassword(request: Request): string {
  const url = new URL(request.url)
  const auth = request.headers.get('authorization')
  if (auth?.startsWith('Basic ')) {
    const decoded = Buffer.from(auth.slice(6), 'base64').toString('utf8')
    return decoded.slice(decoded.indexOf(':') + 1)
  }
  return request.headers.get('x-clickhouse-key') ?? url.searchParams.get('password') ?? ''
}

/**
 * Local-only endpoints over the embedded stores, for CLIs and `wrangler dev` while the server
 * owns them: the ClickHouse HTTP protocol at / and the Upstash REST protocol at /redis.
 * Served on 127.0.0.1 only, behind a token kept in DATA_DIR. `keyValueCalled` runs after each
 * key/value request: the server forgets what it keeps of the store in memory (a key the admin CLI
 * just revoked is refused at once, a site a local worker deleted is gone).
 */
export function localEndpointsApp(options: {
  token: string
  chdb: EmbeddedClickHouse | null
  raw: RawRedis | null
  keyValueCalled?: () => void
}) {
  const app = new Hono()

  app.get('/local/ping', (c) => {
    const bearer = c.req.header('authorization')?.replace(/^Bearer\s+/i, '') ?? ''
    return sameSecret(bearer, options.token) ? c.text('pong') : c.text('unauthorized', 401)
  })

  app.get('/ping', (c) => c.text('Ok.\n'))

  app.on(['GET', 'POST'], '/', async (c) => {
    if (!options.chdb) return c.text('Code: 516. DB::Exception: no embedded ClickHouse here. (AUTHENTICATION_FAILED)', 404)
    if (!sameSecret(clickhousePassword(c.req.raw), options.token)) {
      return c.text('Code: 516. DB::Exception: default: Authentication failed. (AUTHENTICATION_FAILED)', 401, {
        'X-ClickHouse-Exception-Code': '516',
      })
    }
    const url = new URL(c.req.url)
    const params: Record<string, string> = {}
    for (const [name, value] of url.searchParams) if (name.startsWith('param_')) params[name.slice(6)] = value
    const body = c.req.method === 'POST' ? await c.req.text() : ''
    const inUrl = url.searchParams.get('query')
    const sql = inUrl ? (body ? `${inUrl}\n${body}` : inUrl) : body
    if (!sql.trim()) return c.text('Code: 62. DB::Exception: Empty query. (SYNTAX_ERROR)', 400, { 'X-ClickHouse-Exception-Code': '62' })
    try {
      const bytes = await options.chdb.raw(sql, params, url.searchParams.get('default_format') ?? 'TabSeparated')
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': 'text/plain; charset=UTF-8', 'X-ClickHouse-Summary': '{}' })
    } catch (err) {
      const message = (err as Error).message
      const code = /^Code: (\d+)/.exec(message)?.[1] ?? '1000'
      return c.text(message.startsWith('Code:') ? message : `Code: ${code}. DB::Exception: ${message}`, 500, {
        'X-ClickHouse-Exception-Code': code,
      })
    }
  })

  app.post('/redis/:route?', async (c) => {
    const route = c.req.param('route')
    if (route !== undefined && route !== 'pipeline' && route !== 'multi-exec') return c.json({ error: 'ERR unknown route' }, 404)
    return handleRedis(c.req.raw, route)
  })

  async function handleRedis(request: Request, route: string | undefined) {
    const json = (body: unknown, status = 200) => Response.json(body, { status })
    if (!options.raw) return json({ error: 'ERR no embedded key/value store here' }, 404)
    const bearer = request.headers.get('authorization')?.replace(/^Bearer\s+/i, '') ?? ''
    if (!sameSecret(bearer, options.token)) return json({ error: 'Unauthorized' }, 401)
    let body: unknown
    try {
      body = await request.json()
    } catch {
      return json({ error: 'ERR body is not JSON' }, 400)
    }
    const response = await runUpstashRequest(options.raw, route ? [route] : [], body)
    options.keyValueCalled?.()
    return json(encodeUpstashResponse(response, request.headers.get('upstash-encoding') ?? undefined), isUpstashError(response) ? 400 : 200)
  }

  return app
}
