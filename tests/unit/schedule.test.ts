import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { JOBS, everyMinutes, jobsOn } from '../../lib/jobs/schedule'

/** The crons of wrangler.toml's [triggers] table, read with a pattern rather than a TOML parser. */
function wranglerCrons(): string[] {
  const toml = readFileSync(join(__dirname, '../../wrangler.toml'), 'utf8')
  const triggers = toml.split(/^\[triggers\]\s*$/m)[1]?.split(/^\[/m)[0] ?? ''
  const list = triggers.match(/^crons\s*=\s*\[([^\]]*)\]/m)?.[1] ?? ''
  return [...list.matchAll(/"([^"]*)"/g)].map(([, cron]) => cron)
}

describe('the job list', () => {
  it('has exactly the cron triggers of wrangler.toml', () => {
    const crons = wranglerCrons()
    expect(new Set(crons).size).toBe(crons.length)
    expect(crons.toSorted()).toEqual([...new Set(JOBS.map((job) => job.cron))].toSorted())
  })

  it('runs each job on one trigger, every job on some trigger', () => {
    const byTrigger = wranglerCrons().flatMap((cron) => jobsOn(cron))
    expect(byTrigger.toSorted((a, b) => JOBS.indexOf(a) - JOBS.indexOf(b))).toEqual([...JOBS])
  })

  it('gives the Node timers the cadence of each cron', () => {
    expect(JOBS.map((job) => [job.name, everyMinutes(job.cron)])).toEqual([
      ['daily rollup refresh', 360],
      ['daily rollup refresh', 10],
      ['report delivery', 10],
      ['traffic alerts', 10],
      ['daily alerts', 10],
      ['backlinks', 10],
      ['crawl run', 1],
      ['search console import', 10],
      ['ga4 import', 10],
      ['imports due', 1],
      ['ga4 hourly import', 60],
      ['ga4 daily import', 1440],
    ])
    expect(everyMinutes('5 * * * *')).toBe(60)
    expect(() => everyMinutes('0 3 * * 1')).toThrow(/only minutes and hours/)
    expect(everyMinutes('0 3 * * *')).toBe(1440)
    expect(() => everyMinutes('0 3,15 * * *')).toThrow(/not every N minutes/)
  })
})
