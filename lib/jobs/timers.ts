import type { JobServices } from './job-services'
import { type Job, type JobContext, everyMinutes } from './schedule'

export interface JobTimers {
  /** Runs each job once now, then every `everyMinutes(job.cron)`. */
  start(): void
  /** Runs the jobs of this name now (a site added or pinged wakes the crawler). */
  wake(name: string): void
  /** Runs the jobs of this name at `atMs` (an import due again); one timer per name, for the earliest time asked. */
  wakeAt(name: string, atMs: number): void
  /** No run starts any more; resolves when the runs under way have ended, or waited their `stopWaitMs`. */
  stop(): Promise<void>
}

/**
 * The Node scheduler: the job list on timers in this one process. A run due while another run of
 * its name is under way starts once after it, so a wake during a crawl is not lost and two
 * refreshes of the daily rollup never overlap.
 */
export function jobTimers(jobs: readonly Job[], services: JobServices, log: (line: string) => void): JobTimers {
  let stopping = false
  const running = new Map<string, { job: Job; done: Promise<void> }>()
  const waiting = new Map<string, Job[]>()
  const intervals: ReturnType<typeof setInterval>[] = []
  const alarms = new Map<string, { atMs: number; timer: ReturnType<typeof setTimeout> }>()
  const context: JobContext = { log, shouldStop: () => stopping }

  const run = (job: Job) => {
    if (stopping) return
    if (running.has(job.name)) {
      const queue = waiting.get(job.name) ?? []
      if (!queue.includes(job)) waiting.set(job.name, [...queue, job])
      return
    }
    const started = performance.now()
    const done = job
      .run(services, services.now(), context)
      .then(
        () => services.metrics?.job(job.name, true, (performance.now() - started) / 1000),
        (err: Error) => {
          services.metrics?.job(job.name, false, (performance.now() - started) / 1000)
          log(`${job.name} failed: ${err.message}`)
        },
      )
      .finally(() => {
        running.delete(job.name)
        const [next, ...rest] = waiting.get(job.name) ?? []
        waiting.set(job.name, rest)
        if (next) run(next)
      })
    running.set(job.name, { job, done })
  }

  const wake = (name: string) => {
    for (const job of jobs) if (job.name === name) run(job)
  }

  return {
    start() {
      for (const job of jobs) {
        run(job)
        intervals.push(setInterval(() => run(job), everyMinutes(job.cron) * 60_000).unref())
      }
    },
    wake,
    wakeAt(name, atMs) {
      const alarm = alarms.get(name)
      // a later time is asked again by the run the earlier one starts
      if (stopping || (alarm && alarm.atMs <= atMs)) return
      if (alarm) clearTimeout(alarm.timer)
      // setTimeout takes at most 2^31 - 1 ms; a later alarm is set again by the run it starts
      const delay = Math.min(2 ** 31 - 1, Math.max(0, atMs - services.now().getTime()))
      const timer = setTimeout(() => {
        alarms.delete(name)
        wake(name)
      }, delay)
      timer.unref()
      alarms.set(name, { atMs, timer })
    },
    async stop() {
      stopping = true
      for (const interval of intervals) clearInterval(interval)
      for (const alarm of alarms.values()) clearTimeout(alarm.timer)
      const waits = [...running.values()].map(({ job, done }) =>
        job.stopWaitMs === undefined ? done : Promise.race([done, new Promise<void>((resolve) => setTimeout(resolve, job.stopWaitMs))]),
      )
      await Promise.all(waits)
    },
  }
}
