import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { Job } from '../../lib/jobs/schedule'
import { jobTimers } from '../../lib/jobs/timers'
import type { Services } from '../../lib/runtime/services'

/** The Node scheduler's timer for a job due at a time of its own (an import Google asked to wait), on a fake clock. */
describe('jobTimers.wakeAt', () => {
  beforeEach(() => void vi.useFakeTimers({ now: Date.parse('2026-11-20T11:00:00Z') }))
  afterEach(() => void vi.useRealTimers())

  const setup = () => {
    const runs: number[] = []
    const job: Job = { name: 'imports due', cron: '* * * * *', run: async () => void runs.push(Date.now()) }
    const services = { now: () => new Date() } as unknown as Services
    return { runs, timers: jobTimers([job], services, () => {}) }
  }

  it('runs the job at the time asked, not at its next cron run', async () => {
    const { runs, timers } = setup()
    const due = Date.now() + 30_000
    timers.wakeAt('imports due', due)
    await vi.advanceTimersByTimeAsync(29_999)
    expect(runs).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(runs).toEqual([due])
  })

  it('keeps one timer per job, for the earliest time asked; a time already past runs it at once', async () => {
    const { runs, timers } = setup()
    const start = Date.now()
    timers.wakeAt('imports due', start + 60_000)
    timers.wakeAt('imports due', start + 10_000)
    timers.wakeAt('imports due', start + 30_000)
    await vi.advanceTimersByTimeAsync(120_000)
    // the later times are asked again by the run the earliest one starts (runDueImports does)
    expect(runs).toEqual([start + 10_000])
    timers.wakeAt('imports due', start - 5_000)
    await vi.advanceTimersByTimeAsync(0)
    expect(runs).toEqual([start + 10_000, start + 120_000])
  })

  it('sets no timer once stopping', async () => {
    const { runs, timers } = setup()
    timers.wakeAt('imports due', Date.now() + 1_000)
    await timers.stop()
    timers.wakeAt('imports due', Date.now() + 2_000)
    await vi.advanceTimersByTimeAsync(10_000)
    expect(runs).toEqual([])
  })
})
