import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { dbipGeo } from '../../lib/ingest/geo-node'
import { runImport } from '../../lib/ingest/import'
import { harness } from '../helpers'

it('examples/hits.ndjson, the example of docs/import.md, imports whole and reports as documented', async () => {
  const { services, a, call } = await harness()
  const lines = readFileSync('examples/hits.ndjson', 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.replace('YOUR_SNIPPET_ID', a.site.snippetId))
  const result = await runImport(lines, { clickhouse: services.clickhouse, repositories: services.repositories, geo: dbipGeo() })
  expect(result).toMatchObject({ imported: 5, rejected: 0 })
  const stats = await call('GET', `/api/v1/stats?site_id=${a.site.id}&range=custom&from=2026-10-05&to=2026-10-05`, { key: a.read.key })
  expect(stats.json.totals).toMatchObject({ visitors: 2, visits: 2, pageviews: 3, events: 1 })
})
