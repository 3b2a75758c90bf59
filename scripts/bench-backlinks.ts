import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../functions/app'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { LINK_TYPES, tldOf } from '../lib/backlinks/links'
import { importHits } from '../lib/ingest/import'
import { nodeEnvSchema, parseEnv } from '../lib/runtime/env'
import { openNodeHome } from '../lib/runtime/node'
import { newSite } from '../lib/sites/sites'
import { clickhouseTime } from '../lib/storage/clickhouse/time'

/**
 * The latency of GET /api/v1/backlinks for a site with 20,000 links from 2,000 referring domains:
 * 30 daily snapshots of that link set (600,000 rows) with their day rows and events, and 5,000
 * visits through 1,000 of the linking pages (imported hits), on the embedded engine. Each read is
 * requested RUNS times after one warm-up; the median and the slowest are printed in milliseconds.
 *
 *   npx tsx scripts/bench-backlinks.ts [RUNS]
 */
const RUNS = Number(process.argv[2] ?? 15)
const LINKS = 20_000
const DOMAINS = 2_000
const DAYS = 30
const VISITS = 5_000
const TLDS = ['com', 'org', 'net', 'io', 'de', 'fr', 'co.uk', 'dev']

const dir = mkdtempSync(join(tmpdir(), 'bench-backlinks-'))
const home = await openNodeHome(parseEnv(nodeEnvSchema, { DATA_DIR: dir, CRAWLER: '0', DEMO: '0', LOG_LEVEL: 'silent' }), {})
try {
  const { services } = home
  const now = services.now()
  const org = await createOrg(services.repositories, 'Bench', now)
  const key = (await createApiKey(services.repositories, { orgId: org.id, name: 'read', scope: 'read' }, now)).key
  const site = newSite({ domain: 'bench-links.example' }, org.id, now)
  await services.repositories.sites.create(site)

  const links = Array.from({ length: LINKS }, (_, i) => {
    const d = i % DOMAINS
    const domain = `site${d}.example.${TLDS[d % TLDS.length]}`
    return {
      source_url: `https://${domain}/page-${Math.floor(i / DOMAINS)}`,
      target_url: `https://bench-links.example/${['', 'pricing', 'docs', `blog/post-${i % 50}`][i % 4]}`,
      domain,
      tld: tldOf(domain),
      anchor: ['Bench analytics', 'bench-links.example', 'great tool', 'click here', `post ${i % 300}`][i % 5],
      rel: LINK_TYPES[i % 7 === 0 ? 1 : i % 23 === 0 ? 2 : i % 31 === 0 ? 3 : 0],
      image: i % 11 === 0 ? 1 : 0,
      title: `Page ${i}`,
      found_by: ['discovered', 'provider', 'both'][i % 3],
    }
  })
  const dayMs = 86_400_000
  for (let d = DAYS - 1; d >= 0; d--) {
    const at = new Date(now.getTime() - d * dayMs)
    const day = at.toISOString().slice(0, 10)
    // each day a few links come and go
    const live = links.filter((_, i) => (i + d) % 97 !== 0)
    const takenAt = clickhouseTime(at)
    const rows = live.map((l) => ({
      site_id: site.id,
      day,
      taken_at: takenAt,
      ...l,
      first_seen: day,
      domain_authority: (l.domain.length * 37) % 100,
    }))
    for (let i = 0; i < rows.length; i += 10_000) await services.clickhouse.insert('backlink_snapshots', rows.slice(i, i + 10_000))
    await services.clickhouse.insert(
      'backlink_events',
      links
        .filter((_, i) => (i + d) % 97 === 0)
        .slice(0, 200)
        .map(({ tld: _, image: __, title: ___, ...l }) => ({
          site_id: site.id,
          day,
          taken_at: takenAt,
          kind: 'lost',
          reason: 'link_removed',
          ...l,
          new_domain: 0,
          visits: 1,
        })),
    )
    await services.clickhouse.insert('backlink_days', [
      {
        site_id: site.id,
        day,
        taken_at: takenAt,
        links: rows.length,
        domains: DOMAINS,
        dofollow: 0,
        nofollow: 0,
        ugc: 0,
        sponsored: 0,
        authority: 40 + d,
      },
    ])
  }
  const hits = Array.from({ length: VISITS }, (_, i) =>
    JSON.stringify({
      timestamp: new Date(now.getTime() - (i % 28) * dayMs - 3_600_000).toISOString(),
      site: site.snippetId,
      name: 'pageview',
      url: 'https://bench-links.example/',
      referrer: links[i % 1000].source_url,
      ip: `198.18.${Math.floor(i / 250)}.${i % 250}`,
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
    }),
  )
  await importHits(hits, services.ingestor)
  await home.sink.flush()

  const app = createApp(services)
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  for (const query of ['', '&limit=100', '&type=nofollow&tld=org', '&search=tool&offset=100&limit=50']) {
    const times: number[] = []
    for (let i = 0; i <= RUNS; i++) {
      const started = performance.now()
      const res = await app.request(`http://bench.test/api/v1/backlinks?site_id=${site.id}${query}`, {
        headers: { authorization: `Bearer ${key}` },
      })
      const body = await res.text()
      if (res.status !== 200) throw new Error(`${query}: ${res.status} ${body}`)
      if (i === 0 && query === '') {
        const json = JSON.parse(body)
        if (json.counts.links < LINKS * 0.98 || json.counts.referringDomains !== DOMAINS)
          throw new Error(`unexpected counts ${JSON.stringify(json.counts)}`)
      }
      if (i > 0) times.push(performance.now() - started)
    }
    process.stdout.write(
      `${JSON.stringify({ read: `backlinks${query}`, links: LINKS, domains: DOMAINS, runs: RUNS, medianMs: Math.round(median(times)), maxMs: Math.round(Math.max(...times)) })}\n`,
    )
  }
} finally {
  await home.close()
  rmSync(dir, { recursive: true, force: true })
}
