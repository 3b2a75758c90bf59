// Core Web Vitals, loaded by the tracker after `load`. Reports each metric through the tracker.
import { type Metric, onCLS, onFCP, onINP, onLCP, onTTFB } from 'web-vitals'

const report = (m: Metric) =>
  (window as unknown as { svc: (n: string, o: object) => void }).svc('vital', { vital: { name: m.name, value: m.value, rating: m.rating } })
for (const on of [onLCP, onINP, onCLS, onFCP, onTTFB]) on(report)
