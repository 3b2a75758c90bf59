import { type WorkerEnv, workerEnvSchema, workerServices } from '../lib/runtime/worker'
import { ROLLUP_ALL_DAYS, ROLLUP_RECENT_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'
import type { Services } from '../lib/services'
import { deliverReports } from '../lib/jobs/report-delivery'
import { runCrawls } from '../lib/crawl/crawl'
import { deliverTrafficAlerts } from '../lib/jobs/traffic-alerts'
import { createApp } from './app'

/** The daily trigger in wrangler.toml; the other one runs every ten minutes. */
const DAILY_CRON = '17 3 * * *'

let cached: { raw: WorkerEnv; app: ReturnType<typeof createApp>; services: Services } | null = null

/** Builds the app once per isolate. */
function appFor(rawEnv: WorkerEnv) {
  if (cached?.raw === rawEnv) return cached
  const services = workerServices(rawEnv)
  // one console line per request: the Workers log keeps each as an entry
  const level = workerEnvSchema.shape.LOG_LEVEL.parse(rawEnv.LOG_LEVEL || undefined)
  cached = { raw: rawEnv, app: createApp(services, { level, write: (line) => console.log(line) }), services }
  return cached
}

/** What to do about a missing or malformed variable, said once per isolate rather than as a stack per request. */
const SETUP_HINT =
  'set it with `wrangler secret put` (see docs/self-hosting.md); for `wrangler dev` on this machine, run `npm start` and then `npm run dev:worker`, which writes .dev.vars (see .dev.vars.example)'
let toldMisconfigured = false

export default {
  fetch(request: Request, env: WorkerEnv, ctx: Parameters<ReturnType<typeof createApp>['fetch']>[2]) {
    let app: ReturnType<typeof createApp>
    try {
      app = appFor(env).app
    } catch (err) {
      const error = `${(err as Error).message}: ${SETUP_HINT}`
      if (!toldMisconfigured) console.error(error)
      toldMisconfigured = true
      return Response.json({ error }, { status: 503 })
    }
    return app.fetch(request, env, ctx)
  },
  // the daily rollup (lib/reports/rollup/refresh.ts): recent finished days every ten minutes, every day once a day
  scheduled(controller: { cron: string }, env: WorkerEnv, ctx: { waitUntil(p: Promise<unknown>): void }) {
    const { services } = appFor(env)
    const lookback = controller.cron === DAILY_CRON ? ROLLUP_ALL_DAYS : ROLLUP_RECENT_DAYS
    ctx.waitUntil(refreshRollups(services.olap, services.repositories, services.now(), lookback))
    // weekly and monthly reports: webhooks only, Workers have no mailer
    if (controller.cron !== DAILY_CRON) ctx.waitUntil(deliverReports(services, services.now()))
    // the crawler: the sites due, for at most five minutes a run; what is left waits for the next run
    if (controller.cron !== DAILY_CRON && services.crawler) {
      const deadline = Date.now() + 5 * 60_000
      ctx.waitUntil(runCrawls(services, services.crawler, { log: (line) => console.error(line), shouldStop: () => Date.now() > deadline }))
    }
    // spike and drop alerts (lib/jobs/traffic-alerts.ts), webhooks only as well
    if (controller.cron !== DAILY_CRON) ctx.waitUntil(deliverTrafficAlerts(services, services.now()))
  },
}
