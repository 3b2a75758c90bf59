import type { AnswerOf } from '../api'
import { duration, percent } from '../format'

/**
 * One action of a visitor as the activity and journey reads answer it: the activity read's carry
 * who did it (source, place, device), a journey's events are one visitor's and do not.
 */
export type Action =
  | AnswerOf<'GET', '/api/v1/activity'>['actions'][number]
  | NonNullable<AnswerOf<'GET', '/api/v1/journeys'>['events']>[number]

/** Each kind of action's badge. */
const KINDS: Record<string, string> = { pageview: 'view', engagement: 'read', click: 'click', outbound: 'outbound', error: 'error' }

/** What happened, in words: "Viewed", "Clicked “Start free trial”", "Left for github.com". */
function what(a: Action) {
  if (a.kind === 'pageview') return 'Viewed'
  if (a.kind === 'engagement' && a.engagement)
    return `Spent ${duration(a.engagement.ms / 1000)}, scrolled ${percent(a.engagement.scroll / 100)}, on`
  if (a.kind === 'click')
    return `${a.element?.dead ? 'Dead click on' : 'Clicked'} “${a.element?.text || a.element?.tag || 'an element'}” on`
  if (a.kind === 'outbound') return `Left for ${hostOf(a.element?.url ?? '')} from`
  if (a.kind === 'error') return `${a.error?.name ?? 'Error'} on`
  return `${a.name} on`
}
const hostOf = (url: string) => {
  try {
    return new URL(url).host
  } catch {
    return url || 'another site'
  }
}

/** One line of a feed: when, the kind as a badge, what happened on which page, and who (source, place, device). */
export function FeedEntry({ a, time, title, who = [] }: { a: Action; time: string; title: string; who?: string[] }) {
  const rest = who.filter(Boolean)
  return (
    <li data-kind={a.kind}>
      <time datetime={a.timestamp} title={title}>
        {time}
      </time>
      <span class={`kind kind-${a.kind}`}>{KINDS[a.kind] ?? 'event'}</span>
      <span class="what">
        {what(a)} <strong>{a.path}</strong>
        {a.kind === 'error' && a.error ? <span class="muted">: {a.error.message}</span> : null}
      </span>
      {rest.length ? <span class="who muted small">{rest.join(' · ')}</span> : null}
    </li>
  )
}
