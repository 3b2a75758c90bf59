let minute = Number.NaN
let minutePrefix = ''

/**
 * `2026-11-20 10:00:00.000` in UTC, the DateTime64(3) text ClickHouse reads, from a Date, epoch ms
 * or a Temporal instant. Live hits arrive within the same minute: its `YYYY-MM-DD HH:MM:` prefix
 * is kept between calls.
 */
export function clickhouseTime(at: Date | number | { readonly epochMilliseconds: number }): string {
  const ms = typeof at === 'number' ? at : at instanceof Date ? at.getTime() : at.epochMilliseconds
  const m = Math.floor(ms / 60_000)
  if (m !== minute) {
    minute = m
    minutePrefix = new Date(m * 60_000).toISOString().slice(0, 17).replace('T', ' ')
  }
  const rest = ms - m * 60_000
  const seconds = Math.floor(rest / 1000)
  const millis = rest - seconds * 1000
  return `${minutePrefix}${seconds < 10 ? '0' : ''}${seconds}.${millis < 100 ? (millis < 10 ? '00' : '0') : ''}${millis}`
}
