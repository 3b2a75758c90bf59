// The sampled attribution build: which element, shift source or script is behind each metric.
import { onCLS, onFCP, onINP, onLCP, onTTFB } from 'web-vitals/attribution'

type Attributed = { name: string; value: number; rating: string; attribution: Record<string, unknown> }
const pick = (a: Record<string, unknown>, keys: string[]) =>
  Object.fromEntries(
    keys
      .filter((k) => a[k] !== undefined && typeof a[k] !== 'object')
      .map((k) => [k, typeof a[k] === 'string' ? String(a[k]).slice(0, 300) : a[k]]),
  )
const FIELDS: Record<string, string[]> = {
  LCP: ['target', 'url', 'timeToFirstByte', 'resourceLoadDelay', 'resourceLoadDuration', 'elementRenderDelay'],
  INP: [
    'interactionTarget',
    'interactionType',
    'inputDelay',
    'processingDuration',
    'presentationDelay',
    'loadState',
    'scriptUrl',
    'scriptDuration',
  ],
  CLS: ['largestShiftTarget', 'largestShiftValue', 'loadState'],
  FCP: ['timeToFirstByte', 'firstByteToFCP', 'loadState'],
  TTFB: ['waitingDuration', 'dnsDuration', 'connectionDuration', 'requestDuration'],
}
// the longest script behind a slow interaction (Long Animation Frames), flattened to scalars
const withScript = (a: Record<string, unknown>) => {
  const longest = a.longestScript as { entry?: { sourceURL?: string }; intersectingDuration?: number } | undefined
  return longest?.entry?.sourceURL ? { ...a, scriptUrl: longest.entry.sourceURL, scriptDuration: longest.intersectingDuration } : a
}
const report = (m: Attributed) =>
  (window as unknown as { svc: (n: string, o: object) => void }).svc('vital', {
    vital: { name: m.name, value: m.value, rating: m.rating, attribution: pick(withScript(m.attribution), FIELDS[m.name] ?? []) },
  })
for (const on of [onLCP, onINP, onCLS, onFCP, onTTFB]) on(report as never)
