import { rmSync, writeFileSync } from 'node:fs'
import { serve } from '@hono/node-server'
import { STATUS_CODES, type Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { countOrgs, listOrgs } from '../lib/accounts/admin'
import { mintSignInLink } from '../lib/accounts/signin'
import { DEMO_OWNER, crawlDemoWebsite, createDemo, findDemoSite, seedDemo, startDemoTraffic, withDemoWebsite } from '../lib/operations/demo'
import { type DemoWebsite, startDemoWebsite } from '../lib/operations/demo-website-node'
import { checkInstallNow } from '../lib/operations/install-check'
import { siteView } from '../lib/sites/sites'
import { forgetKeptRecords } from '../lib/runtime/services'
import { CRAWL_RUN, JOBS } from '../lib/jobs/schedule'
import { jobTimers } from '../lib/jobs/timers'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'
import { demoWanted, nodeEnvSchema, parseEnv } from '../lib/runtime/env'
import { exitWithFailure } from '../lib/runtime/failure'
import { dropFailedOutputWrites } from '../lib/runtime/output-node'
import { googleConfig } from '../lib/integrations/google/config'
import { dataDir, localInfoFile, localToken, openNodeHome } from '../lib/runtime/node'
import { localEndpointsApp } from './local-endpoints'
import { createApp } from './app'
import { batchedLines } from './request-log'

// a log line that cannot be written (a full disk, a closed pipe) is dropped and counted, never the end of the process
dropFailedOutputWrites()
// a failure the user can fix (a bad variable, a busy port, a data folder in use) is one sentence
process.on('uncaughtException', exitWithFailure)
process.on('unhandledRejection', exitWithFailure)

const env = parseEnv(nodeEnvSchema, process.env)
// a Google client without the secret that seals its tokens is a start-up error, before any store opens
googleConfig(env)

const log = (message: string) => process.stderr.write(`${message}\n`)
const dir = dataDir(env)
// the timers are made before anything can wake them: a site added while the server still starts wakes the crawler
let timers: ReturnType<typeof jobTimers> | undefined
const home = await openNodeHome(env, {
  log,
  wakeCrawler: () => timers?.wake(CRAWL_RUN),
  wakeJob: (job, atMs) => timers?.wakeAt(job, atMs),
})
const { services, stores } = home
void home.replayed.then((rows) => rows && log(`stored ${rows} journaled rows left by the previous run`))
timers = jobTimers(JOBS, services, log)

const requestLines = batchedLines(process.stderr)
process.on('exit', requestLines.flush)
const app = createApp(services, { level: env.LOG_LEVEL, write: requestLines.write }, { compress: true })
const server = serve({
  fetch: app.fetch,
  port: env.PORT,
  hostname: env.HOST,
  // a body that trickles in holds a connection no longer than this (Node's default is 300 s), checked every second
  serverOptions: { requestTimeout: env.REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 1000 },
})
answerMalformedRequestsInJson(server as unknown as Server)
await new Promise((resolve) => server.once('listening', resolve))
const port = (server.address() as { port: number }).port
// the address it listens on, unless that is every address of the machine
const listening = env.HOST === '0.0.0.0' || env.HOST === '::' ? 'localhost' : env.HOST.includes(':') ? `[${env.HOST}]` : env.HOST
// links that leave the server (sign-in and invitation e-mails, shared links) are built from this
// origin, never from a request's Host; the port is known once it listens, and this runs before any request is handled
services.publicUrl ??= `http://${listening}:${port}`
const baseUrl = services.publicUrl
// it listens while it migrates: /health and /ready answer, everything else 503 until the migrations are applied
await home.migrated

let stopping = false
let local: ReturnType<typeof serve> | null = null
// the admin CLI and `wrangler dev` change the store through the local endpoint: what this process
// keeps of it in memory (keys, sites) is read again, so their changes apply at once
if (stores.chdb || stores.raw) {
  const token = localToken(dir)
  local = serve({
    fetch: localEndpointsApp({ token, chdb: stores.chdb, raw: stores.raw, keyValueCalled: () => forgetKeptRecords(services) }).fetch,
    port: env.LOCAL_PORT ?? (env.PORT ? env.PORT + 1 : 0),
    hostname: '127.0.0.1',
  })
  await new Promise((resolve) => local!.once('listening', resolve))
  const localPort = (local.address() as { port: number }).port
  const info = JSON.stringify({ url: `http://127.0.0.1:${localPort}`, pid: process.pid, clickhouse: !!stores.chdb, redis: !!stores.raw })
  // a full disk does not stop the server: the CLIs find it once the file is written
  const publish = () => {
    if (stopping) return
    try {
      writeFileSync(localInfoFile(dir), info)
    } catch (err) {
      log(
        `cannot write ${localInfoFile(dir)} (${(err as Error).message}): the CLIs reach this server once it is written; trying again in 5 s`,
      )
      setTimeout(publish, 5000).unref()
    }
  }
  publish()
}

let demoWebsite: DemoWebsite | null = null
const firstStart = (await countOrgs(stores.repositories)) === 0
if (firstStart && demoWanted(env)) {
  // not ready while the demo is made: its reads would race the work below
  const readiness = services.readiness
  services.readiness = () => {
    const home = readiness?.()
    return home && !home.ready ? home : { ready: false, phase: 'demo' }
  }
  const demo = await createDemo(stores.repositories, new Date())
  const seeded = await seedDemo(services, demo.site, new Date(), {
    traffic: env.SKIP_DEMO_TRAFFIC !== '1',
    flush: () => home.sink.flush(),
  })
  // the seed's days rolled up now, as the first rollup job would: that job yields to reads, so
  // started with the first requests it would leave every read of the demo on the events until done
  await refreshRollups(services.clickhouse, services.repositories, new Date(), ROLLUP_ALL_DAYS, log)
  // its website on loopback, crawled twice, so that pages and changes have something to show
  if (services.crawler && env.SKIP_DEMO_TRAFFIC !== '1') {
    demoWebsite = await startDemoWebsite('before', siteView(demo.site, baseUrl).snippet)
    services.crawler = withDemoWebsite(services.crawler, demo.site.id, demoWebsite.origin)
    await crawlDemoWebsite(services, services.crawler, demo.site, demoWebsite, new Date())
    // and its install checked there: the snippet is on its homepage
    await checkInstallNow(services, demo.site)
  }
  services.readiness = readiness
  const signInLink = await mintSignInLink(stores.repositories, DEMO_OWNER, baseUrl, new Date())
  // on stdout: the log (stderr) goes to a log collector, and must never hold a key or a sign-in link
  process.stdout.write(
    `${[
      '',
      `First start: created the organization "${demo.org.name}" and the site ${demo.site.domain} (id ${demo.site.id}, snippet ${demo.site.snippetId}), with ${seeded.imported} demo hits over two months.`,
      'Its keys are shown only now. Paste this line into your shell:',
      '',
      `  export KEY=${demo.readKey} WRITE_KEY=${demo.writeKey} SITE=${demo.site.id} ORG=${demo.org.id}`,
      '',
      'then try:',
      `  curl -H "Authorization: Bearer $KEY" ${baseUrl}/api/v1/me`,
      `  curl -H "Authorization: Bearer $KEY" "${baseUrl}/api/v1/stats?site_id=$SITE&range=7d"`,
      '',
      `Open the dashboard as the demo organization's owner (${DEMO_OWNER}) with this one-time link (valid 15 minutes):`,
      '',
      `  ${signInLink}`,
      '',
      `Later: npm run -s admin -- login --email ${DEMO_OWNER}`,
      '',
    ].join('\n')}\n`,
  )
} else if (firstStart) {
  log(
    [
      'First start against a ClickHouse server or Redis: no demo data was made (DEMO=1 makes it). To begin:',
      '  npm run -s admin -- org create --name "My company" --owner you@example.com',
      '  npm run -s admin -- key create --org <id from above> --name me --scope write',
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

// the demo site gets a light trickle of live visitors while the server runs, unless DEMO_LIVE_TRAFFIC=0 (or the demo has no traffic)
const demoSite = await findDemoSite(stores.repositories)
// on later starts too, the demo site's pages come from its website
if (demoSite && services.crawler && !demoWebsite) {
  demoWebsite = await startDemoWebsite('after', siteView(demoSite, baseUrl).snippet)
  services.crawler = withDemoWebsite(services.crawler, demoSite.id, demoWebsite.origin)
}
const liveDemo = demoSite && env.DEMO_LIVE_TRAFFIC !== '0' && env.SKIP_DEMO_TRAFFIC !== '1'
const stopDemoTraffic = liveDemo ? startDemoTraffic(services, demoSite) : () => {}

log(`analytics API on ${baseUrl} (ClickHouse: ${stores.describe.clickhouse}; key/value: ${stores.describe.keyValue})`)

async function shutdown(signal: string) {
  if (stopping) return
  stopping = true
  log(`${signal}: stopping`)
  stopDemoTraffic()
  // no job starts any more; a crawl under way stops after the page it is fetching
  const jobsEnded = timers!.stop()
  rmSync(localInfoFile(dir), { force: true })
  ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
  await new Promise((r) => server.close(r))
  await jobsEnded
  if (local) await new Promise((r) => local!.close(r))
  // every hit answered 202 is stored before the stores close
  await home.close()
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))

// the scheduled jobs and their cadences are listed in lib/jobs/schedule.ts
timers.start()

/**
 * Requests Node's HTTP parser refuses before the app sees them (a lowercase method, raw bytes in
 * the URL, headers over Node's limit) are answered like every other error: {"error"} in JSON.
 */
function answerMalformedRequestsInJson(http: Server) {
  http.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy()
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
    const error =
      status === 431
        ? 'request headers are too large'
        : status === 408
          ? 'the request took too long to arrive'
          : `malformed HTTP request (${err.code ?? 'unparseable'})`
    const body = JSON.stringify({ error })
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nAccess-Control-Allow-Origin: *\r\nConnection: close\r\n\r\n${body}`,
    )
  })
}
