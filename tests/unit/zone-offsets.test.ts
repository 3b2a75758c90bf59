import { Temporal } from 'temporal-polyfill'
import { describe, expect, it } from 'vitest'
import { offsetsOver } from '../../lib/insights/why/shifts'

/**
 * The hourly spikes read steps through hours with plain arithmetic and the zone's offsets found
 * once (offsetsOver): each hour's offset must be the one Temporal gives for that instant, across
 * DST changes of an hour, of half an hour (Lord Howe), southern ones and none.
 */
describe('offsetsOver', () => {
  for (const timezone of ['UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Santiago']) {
    it(`gives Temporal's offset at every hour of a year in ${timezone}`, () => {
      const from = Temporal.ZonedDateTime.from(`2025-09-01T00:30:00[${timezone}]`)
      const to = from.add({ days: 400 })
      const offsetAt = offsetsOver(from, to)
      let mismatches = 0
      let hours = 0
      for (let at = from.epochMilliseconds / 1000; at < to.epochMilliseconds / 1000; at += 3600) {
        const expected = Temporal.Instant.fromEpochMilliseconds(at * 1000).toZonedDateTimeISO(timezone).offsetNanoseconds / 1e9
        if (offsetAt(at) !== expected) mismatches++
        hours++
      }
      expect(hours).toBeGreaterThan(9500)
      expect(mismatches).toBe(0)
    })
  }
})
