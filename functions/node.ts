import { rmSync, writeFileSync } from 'node:fs'
import { lookup } from 'node:dns/promises'
import { serve } from '@hono/node-server'
import { z } from 'zod'
import { createDemo } from '../lib/demo'
import { dataDir, localInfoFile, localToken, openNodeStores } from '../lib/home/node'
import { localEndpointsApp } from '../lib/home/local-endpoints'
import { migrate } from '../lib/olap/migrate'
import { loadMigrations } from '../lib/olap/migrations-node'
import { guardedFetch } from '../lib/outbound'
import { createApp } from './app'

const env = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(8787),
    HOST: z.string().default('0.0.0.0'),
    LOCAL_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    PUBLIC_URL: z.url().optional(),
    DATA_DIR: z.string().optional(),
    CLICKHOUSE_URL: z.url().optional(),
    CLICKHOUSE_USER: z.string().optional(),
    CLICKHOUSE_PASSWORD: z.string().optional(),
    CLICKHOUSE_DATABASE: z.string().optional(),
    CLICKHOUSE_CLUSTER: z.string().optional(),
    REDIS_URL: z.url().optional(),
    UPSTASH_REDIS_REST_URL: z.url().optional(),
    UPSTASH_REDIS_REST_TOKEN: z.string().optional(),
    OUTBOUND_ALLOW_PRIVATE: z.enum(['0', '1']).default('0'),
  })
  // an empty variable means unset
  .parse(Object.fromEntries(Object.entries(process.env).filter(([, value]) => value !== '')))

const log = (message: string) => process.stderr.write(`${message}\n`)
const dir = dataDir(env)
const stores = await openNodeStores(env)
if (stores.chdb) await migrate(stores.chdb, loadMigrations())

const services = {
  olap: stores.olap,
  store: stores.store,
  limiter: stores.limiter,
  now: () => new Date(),
  fetch: guardedFetch({
    allowPrivate: env.OUTBOUND_ALLOW_PRIVATE === '1',
    resolve: async (host) => (await lookup(host, { all: true })).map((a) => a.address),
  }),
  publicUrl: env.PUBLIC_URL?.replace(/\/$/, ''),
}
const app = createApp(services)
const server = serve({ fetch: app.fetch, port: env.PORT, hostname: env.HOST })
await new Promise((resolve) => server.once('listening', resolve))
const port = (server.address() as { port: number }).port
const baseUrl = services.publicUrl ?? `http://localhost:${port}`

let local: ReturnType<typeof serve> | null = null
if (stores.chdb || stores.raw) {
  const token = localToken(dir)
  local = serve({ fetch: localEndpointsApp({ token, chdb: stores.chdb, raw: stores.raw }).fetch, port: env.LOCAL_PORT ?? (env.PORT ? env.PORT + 1 : 0), hostname: '127.0.0.1' })
  await new Promise((resolve) => local!.once('listening', resolve))
  const localPort = (local.address() as { port: number }).port
  writeFileSync(localInfoFile(dir), JSON.stringify({ url: `http://127.0.0.1:${localPort}`, pid: process.pid, clickhouse: !!stores.chdb, redis: !!stores.raw }))
}

if ((await stores.store.countOrgs()) === 0) {
  const demo = await createDemo(stores.store, new Date())
  log(
    [
      '',
      'First start: created a demo organization and site. These keys are shown once:',
      `  read key:  ${demo.readKey}`,
      `  write key: ${demo.writeKey}`,
      `  site:      ${demo.site.domain} (id ${demo.site.id}, snippet ${demo.site.snippetId})`,
      '',
      'Try:',
      `  curl -H "Authorization: Bearer ${demo.readKey}" ${baseUrl}/api/v1/me`,
      '',
    ].join('\n'),
  )
}

log(`analytics API on ${baseUrl} (ClickHouse: ${stores.describe.clickhouse}; key/value: ${stores.describe.keyValue})`)

let stopping = false
async function shutdown(signal: string) {
  if (stopping) return
  stopping = true
  log(`${signal}: stopping`)
  rmSync(localInfoFile(dir), { force: true })
  ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
  await Promise.all([new Promise((r) => server.close(r)), local ? new Promise((r) => local!.close(r)) : null])
  await stores.close()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
