import { jobsOn } from '../lib/jobs/schedule'
import { type WorkerEnv, workerEnvSchema, workerServices } from '../lib/runtime/worker'
import type { Services } from '../lib/runtime/services'
import { createApp } from './app'

/** How long the jobs of one cron run may go on starting work (a crawl stops after the page it is fetching); what is left waits for the next run. */
const CRON_RUN_MS = 5 * 60_000

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
  // the jobs of this trigger (lib/jobs/schedule.ts lists them with their crons; wrangler.toml has the same crons).
  // Reports and alerts go by webhook only: Workers have no mailer.
  scheduled(controller: { cron: string }, env: WorkerEnv, ctx: { waitUntil(p: Promise<unknown>): void }) {
    const { services } = appFor(env)
    const deadline = Date.now() + CRON_RUN_MS
    const log = (line: string) => console.error(line)
    for (const job of jobsOn(controller.cron)) {
      const run = job.run(services, services.now(), { log, shouldStop: () => Date.now() > deadline })
      ctx.waitUntil(run.catch((err: Error) => log(`${job.name} failed: ${err.message}`)))
    }
  },
}
