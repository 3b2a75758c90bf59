import type { JobServices } from './job-services'
import { runCrawls } from '../crawl/crawl'
import { runSearchConsoleImports } from '../integrations/search-console/import'
import { listAllSites } from '../sites/listing'
import { runGa4Imports } from '../integrations/ga4/import'
import { runDueImports } from '../integrations/due-imports'
import { IMPORTS_DUE_JOB } from '../integrations/import-wakeups-repository'
import { ROLLUP_ALL_DAYS, ROLLUP_RECENT_DAYS, refreshRollups } from '../reports/rollup/refresh'
import { deliverReports } from './report-delivery'
import { deliverTrafficAlerts } from './traffic-alerts'
import { deliverDailyAlerts } from './backlink-alerts'
import { runBacklinks } from '../backlinks/discover'

/** What a home gives a run: where its lines go, and whether it must stop early (shutdown, the end of a cron run's time). */
export interface JobContext {
  log: (line: string) => void
  shouldStop: () => boolean
}

export interface Job {
  /** Also the lock: two runs of one name never overlap in a process, and a failure is logged as `<name> failed: ...`. */
  name: string
  /** When it runs, in UTC: a Workers cron trigger in wrangler.toml; the Node scheduler runs it at start and then every `everyMinutes(cron)`. */
  cron: string
  /** How long a stopping server waits for a run under way; unset, until it ends. */
  stopWaitMs?: number
  run(services: JobServices, now: Date, context: JobContext): Promise<unknown>
}

/** The crawler's job, which a site added or pinged wakes on Node. */
export const CRAWL_RUN = 'crawl run'

/**
 * Every scheduled job, once, in the order a starting server runs them. Each works site by site: a
 * site that fails is logged and the others still run.
 */
export const JOBS: readonly Job[] = [
  // the daily rollup (lib/reports/rollup/refresh.ts), with today's partial rollup: every finished day every six hours
  // (and at start, before the recent days), recent ones every ten minutes. Minute 17 keeps the two apart on Workers,
  // where runs of one name are not kept from overlapping.
  {
    name: 'daily rollup refresh',
    cron: '17 */6 * * *',
    run: (services, now, { log }) => refreshRollups(services.clickhouse, services.repositories, now, ROLLUP_ALL_DAYS, log),
  },
  {
    name: 'daily rollup refresh',
    cron: '*/10 * * * *',
    run: (services, now, { log }) => refreshRollups(services.clickhouse, services.repositories, now, ROLLUP_RECENT_DAYS, log),
  },
  // weekly and monthly reports (lib/jobs/report-delivery.ts): each run sends what is due and not yet sent
  { name: 'report delivery', cron: '*/10 * * * *', run: (services, now, { log }) => deliverReports(services, now, { log }) },
  // the spike and drop alerts (lib/jobs/traffic-alerts.ts)
  { name: 'traffic alerts', cron: '*/10 * * * *', run: (services, now, { log }) => deliverTrafficAlerts(services, now, { log }) },
  // the backlink and vitals alerts (lib/jobs/backlink-alerts.ts): once a day per site, about the day before
  { name: 'daily alerts', cron: '*/10 * * * *', run: (services, now, { log }) => deliverDailyAlerts(services, now, { log }) },
  // backlink discovery (lib/backlinks/discover.ts): each site hourly (a new one at once): referring pages checked, the provider, the day's snapshot
  { name: 'backlinks', cron: '*/10 * * * *', stopWaitMs: 3000, run: (services, _now, context) => runBacklinks(services, context) },
  // the crawler (lib/crawl/crawl.ts): the sites due (new, pinged, or due again); on Node also at once when a site is
  // added or pinged. A run stops after the page it is fetching, so shutdown waits for it a few seconds only.
  {
    name: CRAWL_RUN,
    cron: '* * * * *',
    stopWaitMs: 3000,
    run: async (services, _now, context) => {
      if (services.crawler) await runCrawls(services, services.crawler, context)
    },
  },
  // the Search Console import (lib/integrations/search-console/import.ts): the 16 months of a newly bound property, the
  // last three days again once a day, and waits Google asked for; nothing for a site without a bound property
  {
    name: 'search console import',
    cron: '*/10 * * * *',
    run: (services, now, context) => runSearchConsoleImports(services, () => listAllSites(services.repositories), now, context),
  },
  // GA4 imports (lib/integrations/ga4/import.ts): every ten minutes the runs under way go on (a history, one that
  // waited for a quota or a failure of Google's); every hour today and yesterday are imported again, and once a
  // day the three days before (GA4 data settles within 72 hours), each replacing what it imported before
  { name: 'ga4 import', cron: '*/10 * * * *', run: (services, now, context) => runGa4Imports(services, now, context) },
  // the imports due at a time of their own (lib/integrations/due-imports.ts): a wait Google asked for is over, a run
  // was cut short. Every minute (nothing due is one read); on Node also by a timer at the earliest one due
  { name: IMPORTS_DUE_JOB, cron: '* * * * *', run: (services, _now, context) => runDueImports(services, context) },
  { name: 'ga4 hourly import', cron: '23 * * * *', run: (services, now, context) => runGa4Imports(services, now, context, 'hourly') },
  { name: 'ga4 daily import', cron: '47 3 * * *', run: (services, now, context) => runGa4Imports(services, now, context, 'daily') },
]

/** The jobs a Workers cron trigger runs. */
export const jobsOn = (cron: string) => JOBS.filter((job) => job.cron === cron)

/** The minutes between two runs of a cron expression of the shapes the list uses: every N minutes, at minute M every N hours, or once a day. */
export function everyMinutes(cron: string): number {
  const [minute, hour, ...rest] = cron.split(' ')
  if (rest.join(' ') !== '* * *') throw new Error(`cron ${cron}: only minutes and hours may be set`)
  const step = (field: string) => (field === '*' ? 1 : /^\*\/\d+$/.test(field) ? Number(field.slice(2)) : null)
  if (hour === '*' && step(minute)) return step(minute)!
  if (/^\d+$/.test(minute) && step(hour)) return step(hour)! * 60
  if (/^\d+$/.test(minute) && /^\d+$/.test(hour)) return 24 * 60
  throw new Error(`cron ${cron}: not every N minutes, nor at a minute every N hours`)
}
