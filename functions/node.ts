import { rmSync, writeFileSync } from 'node:fs'
import { Resolver, lookup } from 'node:dns/promises'
import { serve } from '@hono/node-server'
import { type IncomingMessage, STATUS_CODES, type Server } from 'node:http'
import { join } from 'node:path'
import type { Duplex } from 'node:stream'
import { countOrgs, listOrgs } from '../lib/accounts/admin'
import { createDemo } from '../lib/demo'
import { demoHits } from '../lib/ingest/demo-traffic'
import { ROLLUP_ALL_DAYS, ROLLUP_RECENT_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'
import { importHits } from '../lib/ingest/import'
import { nodeEnvSchema, parseEnv } from '../lib/runtime/env'
import { exitWithFailure } from '../lib/runtime/failure'
import { dataDir, localInfoFile, localToken, openNodeStores } from '../lib/runtime/node'
import { localEndpointsApp } from './local-endpoints'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { guardedFetch } from '../lib/network/guarded-fetch'
import { crawlerConfig } from '../lib/crawl/config'
import { cruxConfig } from '../lib/integrations/crux'
import { runCrawls } from '../lib/crawl/crawl'
import { pinnedNodeFetch } from '../lib/network/guarded-fetch-node'
import { dbipGeo } from '../lib/ingest/geo-node'
import { Ingestor } from '../lib/ingest/pipeline'
import { Journal } from '../lib/ingest/journal'
import { BufferedSink } from '../lib/ingest/sink'
import { memoryLiveCache } from '../lib/sites/public-live'
import { swaggerUiAssets } from '../lib/runtime/reference-assets-node'
import { SiteDirectory } from '../lib/sites/site-directory'
import type { Services } from '../lib/services'
import { deliverReports } from '../lib/jobs/report-delivery'
import { deliverTrafficAlerts } from '../lib/jobs/traffic-alerts'
import { nodeMailer } from '../lib/network/mail-node'
import { createApp } from './app'
import { batchedLines } from './request-log'

// a failure the user can fix (a bad variable, a busy port, a data folder in use) is one sentence
process.on('uncaughtException', exitWithFailure)
process.on('unhandledRejection', exitWithFailure)

const env = parseEnv(nodeEnvSchema, process.env)

const log = (message: string) => process.stderr.write(`${message}\n`)
const dir = dataDir(env)
const stores = await openNodeStores(env)
if (stores.chdb) await migrate(stores.chdb, loadMigrations())

// a hit is acknowledged once it is in the journal on disk; what an earlier process journaled and
// did not insert (a crash, kill -9) is stored now, before anything is served
const { journal, replayed } = await Journal.open(join(dir, 'journal'), stores.olap, stores.repositories)
if (replayed) log(`stored ${replayed} journaled rows left by the previous run`)
const sink = new BufferedSink(stores.olap, stores.repositories, { log: journal })
const now = () => new Date()
const sites = new SiteDirectory(stores.repositories.sites)
// declared before anything can call them: a site added while the server still starts wakes the crawler
let stopping = false
let crawls: Promise<unknown> | null = null
let crawlAgain = false
const outboundRules = {
  allowPrivate: env.OUTBOUND_ALLOW_PRIVATE === '1',
  resolve: async (host: string) => (await lookup(host, { all: true })).map((a) => a.address),
  pinnedFetch: pinnedNodeFetch(),
}
const services: Services = {
  olap: stores.olap,
  kv: stores.kv,
  repositories: stores.repositories,
  sites,
  limiter: stores.limiter,
  now,
  ingestor: new Ingestor({ sites, repositories: stores.repositories, sink, geo: dbipGeo(), now, coalesce: true }),
  sharedProcess: true,
  liveCache: memoryLiveCache(),
  dns: (() => {
    const resolver = new Resolver({ timeout: 2000, tries: 2 })
    return {
      reverse: (ip: string) => resolver.reverse(ip),
      lookup: async (host: string) => [...(await resolver.resolve4(host).catch(() => [])), ...(await resolver.resolve6(host).catch(() => []))],
      // no such record or name is an empty answer; a failing resolver stays an error
      cname: (host: string) => resolver.resolveCname(host).catch((err: NodeJS.ErrnoException) => (err.code === 'ENODATA' || err.code === 'ENOTFOUND' ? [] : Promise.reject(err))),
    }
  })(),
  clientAddress: (request, bindings) => {
    const forwarded = env.TRUST_PROXY === '1' ? request.headers.get('x-forwarded-for')?.split(',')[0].trim() : undefined
    const socket = (bindings as { incoming?: IncomingMessage }).incoming?.socket
    return (forwarded || socket?.remoteAddress || '').replace(/^::ffff:(?=\d+\.)/, '')
  },
  fetch: guardedFetch(outboundRules),
  crawler:
    env.CRAWLER === '1'
      ? { ...crawlerConfig({ guarded: (limits) => guardedFetch({ ...outboundRules, ...limits }), hostIntervalMs: env.CRAWL_HOST_INTERVAL_MS, origin: env.CRAWL_ORIGIN }), wake: () => scheduleCrawls() }
      : undefined,
  crux: cruxConfig(env),
  publicUrl: env.PUBLIC_URL?.replace(/\/$/, ''),
  mailer: nodeMailer({ smtpUrl: env.SMTP_URL, dataDir: dir, from: env.MAIL_FROM ?? `reports@${env.PUBLIC_URL ? new URL(env.PUBLIC_URL).hostname : 'localhost'}`, log }),
  referenceAssets: swaggerUiAssets(),
}
const requestLines = batchedLines(process.stderr)
process.on('exit', requestLines.flush)
const app = createApp(services, { level: env.LOG_LEVEL, write: requestLines.write })
const server = serve({ fetch: app.fetch, port: env.PORT, hostname: env.HOST })
answerMalformedRequestsInJson(server as unknown as Server)
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

if ((await countOrgs(stores.repositories)) === 0) {
  const demo = await createDemo(stores.repositories, new Date())
  const hits = env.SKIP_DEMO_TRAFFIC === '1' ? [] : demoHits({ site: demo.site.snippetId, domain: demo.site.domain, days: 30, visitorsPerDay: 150, end: new Date() })
  const seeded = await importHits((function* () { for (const hit of hits) yield JSON.stringify(hit) })(), services.ingestor)
  await sink.flush()
  log(
    [
      '',
      `First start: created the organization "${demo.org.name}" and the site ${demo.site.domain} (id ${demo.site.id}, snippet ${demo.site.snippetId}), with ${seeded.imported} demo hits over 30 days.`,
      'Its keys are shown only now. Paste this line into your shell:',
      '',
      `  export KEY=${demo.readKey} WRITE_KEY=${demo.writeKey} SITE=${demo.site.id} ORG=${demo.org.id}`,
      '',
      'then try:',
      `  curl -H "Authorization: Bearer $KEY" ${baseUrl}/api/v1/me`,
      `  curl -H "Authorization: Bearer $KEY" "${baseUrl}/api/v1/stats?site_id=$SITE&range=7d"`,
      '',
    ].join('\n'),
  )
} else {
  const orgs = await listOrgs(stores.repositories)
  const org = orgs.length === 1 ? orgs[0].id : '<id from org list>'
  log(
    [
      `Data from an earlier start is in ${dir}; keys are shown only when they are made. To make one:`,
      ...(orgs.length === 1 ? [] : ['  npm run -s admin -- org list']),
      `  npm run -s admin -- key create --org ${org} --name me --scope read`,
    ].join('\n'),
  )
}

log(`analytics API on ${baseUrl} (ClickHouse: ${stores.describe.clickhouse}; key/value: ${stores.describe.keyValue})`)

async function shutdown(signal: string) {
  if (stopping) return
  stopping = true
  log(`${signal}: stopping`)
  rmSync(localInfoFile(dir), { force: true })
  ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
  await new Promise((r) => server.close(r))
  await rollup
  await reports
  // a crawl stops after the page it is fetching (at most the crawler's timeout); it is not waited for longer than a few seconds
  await Promise.race([crawls, new Promise((r) => setTimeout(r, 3000))])
  // every hit answered 202 is stored before the stores close
  await sink.close()
  journal.close()
  if (local) await new Promise((r) => local!.close(r))
  await stores.close()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))

// the daily rollup (lib/reports/rollup/refresh.ts): every finished day at start and every few hours, recent ones every ten minutes
let rollupRuns = 0
let rollup: Promise<unknown> | null = null
function scheduleRollups() {
  if (rollup || stopping) return
  const lookback = rollupRuns++ % 36 === 0 ? ROLLUP_ALL_DAYS : ROLLUP_RECENT_DAYS
  rollup = refreshRollups(stores.olap, stores.repositories, new Date(), lookback)
    .catch((err: Error) => log(`daily rollup refresh failed: ${err.message}`))
    .finally(() => (rollup = null))
}
scheduleRollups()
setInterval(scheduleRollups, 10 * 60_000).unref()

// weekly and monthly reports (lib/jobs/report-delivery.ts): each run sends what is due and not yet sent
let reports: Promise<unknown> | null = null
function scheduleReports() {
  if (reports || stopping) return
  // and the spike and drop alerts (lib/jobs/traffic-alerts.ts), after them
  reports = deliverReports(services, new Date(), { log })
    .catch((err: Error) => log(`report delivery failed: ${err.message}`))
    .then(() => deliverTrafficAlerts(services, new Date(), { log }))
    .catch((err: Error) => log(`traffic alerts failed: ${err.message}`))
    .finally(() => (reports = null))
}
scheduleReports()
setInterval(scheduleReports, 10 * 60_000).unref()

// the crawler (lib/crawl/crawl.ts): every minute, and at once when a site is added or pinged, the sites due
function scheduleCrawls() {
  if (stopping || !services.crawler) return
  // a wake during a run starts another run after it, for the site that just became due
  if (crawls) return void (crawlAgain = true)
  crawls = runCrawls(services, services.crawler, { log, shouldStop: () => stopping })
    .catch((err: Error) => log(`crawl run failed: ${err.message}`))
    .finally(() => {
      crawls = null
      if (crawlAgain) {
        crawlAgain = false
        scheduleCrawls()
      }
    })
}
scheduleCrawls()
setInterval(scheduleCrawls, 60_000).unref()

/**
 * Requests Node's HTTP parser refuses before the app sees them (a lowercase method, raw bytes in
 * the URL, headers over Node's limit) are answered like every other error: {"error"} in JSON.
 */
function answerMalformedRequestsInJson(http: Server) {
  http.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy()
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
    const error =
      status === 431 ? 'request headers are too large' : status === 408 ? 'the request took too long to arrive' : `malformed HTTP request (${err.code ?? 'unparseable'})`
    const body = JSON.stringify({ error })
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n${body}`,
    )
  })
}
