import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Redis } from '@upstash/redis'
import { describe, expect, it } from 'vitest'
import { CrawlQueue } from '../../lib/crawl/crawl-queue-repository'
import { EmbeddedRedis } from '../../lib/storage/kv/embedded'
import { rawRequester } from '../../lib/storage/kv/raw'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { tempDir } from '../helpers'
import { CRAWLER_NAME } from '../../lib/crawl/config'
import { type ComparedSnapshot, comparePage, foldSiteWide, wordChanges } from '../../lib/crawl/detect'
import { readRobots, readSitemap } from '../../lib/crawl/discover'
import { countWords, parsePage } from '../../lib/crawl/parse'

/** The pure pieces of the crawler: robots groups, sitemap files, page fields, comparison and folding. */

const snapshot = (over: Partial<ComparedSnapshot> = {}): ComparedSnapshot => ({
  id: crypto.randomUUID(),
  path: '/a',
  status: 200,
  finalUrl: 'https://x.test/a',
  contentType: 'text/html',
  title: 'A',
  metaDescription: '',
  canonical: '',
  robotsMeta: '',
  h1: 'A',
  mainText: 'one two three',
  wordCount: 3,
  contentHash: 'h1',
  removed: false,
  ...over,
})

describe('the crawler, piece by piece', () => {
  it('reads robots.txt for its own group first, then the * group', () => {
    const both = readRobots(
      'https://x.test',
      `User-agent: *\nDisallow: /all\n\nUser-agent: ${CRAWLER_NAME}\nDisallow: /ours\n`,
      CRAWLER_NAME,
    )
    expect([both.allows('/ours'), both.allows('/all'), both.allows('/fine')]).toEqual([false, true, true])
    const star = readRobots('https://x.test', 'User-agent: *\nDisallow: /private\nSitemap: https://x.test/s.xml\n', CRAWLER_NAME)
    expect([star.allows('/private/x'), star.allows('/public')]).toEqual([false, true])
    expect(star.sitemaps).toEqual(['https://x.test/s.xml'])
    expect(readRobots('https://x.test', '', CRAWLER_NAME).allows('/anything')).toBe(true)
  })

  it('reads sitemaps and sitemap indexes, and nothing from other files', () => {
    expect(
      readSitemap('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc> https://x.test/a </loc></url></urlset>'),
    ).toEqual({ pages: ['https://x.test/a'], sitemaps: [] })
    expect(
      readSitemap(
        '<sitemapindex><sitemap><loc>https://x.test/1.xml</loc></sitemap><sitemap><loc>https://x.test/2.xml</loc></sitemap></sitemapindex>',
      ),
    ).toEqual({ pages: [], sitemaps: ['https://x.test/1.xml', 'https://x.test/2.xml'] })
    expect(readSitemap('<html><body>not a sitemap</body></html>')).toEqual({ pages: [], sitemaps: [] })
    expect(readSitemap('<<<')).toEqual({ pages: [], sitemaps: [] })
  })

  it('reads a page: fields, same-origin links without query or fragment, main text', () => {
    const html = `<html><head><title> Hello   world </title><meta name="Description" content="About it"><link rel="canonical" href="/c"><meta name="robots" content="NOINDEX"></head>
      <body><h1>Big</h1><article><p>First paragraph of the article, long enough to be read as one.</p><p>Second.</p></article>
      <a href="/x?y=1#z">x</a><a href="https://x.test/x">again</a><a href="https://other.test/">out</a><a href="mailto:a@b">mail</a></body></html>`
    const page = parsePage(html, new URL('https://x.test/page'), 'https://x.test')
    expect(page).toMatchObject({
      title: 'Hello world',
      metaDescription: 'About it',
      canonical: 'https://x.test/c',
      robotsMeta: 'noindex',
      h1: 'Big',
      links: ['/x'],
    })
    expect(page.mainText).toBe('First paragraph of the article, long enough to be read as one. Second.')
    expect(page.wordCount).toBe(13)
    expect(countWords('a , b — c')).toBe(3)
  })

  it('compares snapshots into typed changes', () => {
    const before = snapshot()
    expect(comparePage(null, before).map((c) => c.type)).toEqual(['new_page'])
    expect(comparePage(before, snapshot({ status: 404, removed: true })).map((c) => [c.type, c.after])).toEqual([['removed', '404']])
    expect(comparePage(before, snapshot({ removed: true })).map((c) => [c.type, c.after])).toEqual([['removed', 'gone from the sitemap']])
    expect(comparePage(before, snapshot({ status: 500 })).map((c) => c.type)).toEqual(['status'])
    const many = comparePage(
      before,
      snapshot({ title: 'B', robotsMeta: 'noindex', canonical: 'https://x.test/', mainText: 'one three four', contentHash: 'h2' }),
    )
    expect(many.map((c) => [c.type, c.category, c.diffable])).toEqual([
      ['title', 'seo', true],
      ['canonical', 'seo', false],
      ['noindex', 'seo', false],
      ['text', 'content', true],
    ])
    expect(many.at(-1)).toMatchObject({ wordsAdded: 1, wordsRemoved: 1 })
    const pdf = comparePage(snapshot({ contentType: 'application/pdf' }), snapshot({ contentType: 'application/pdf', contentHash: 'h2' }))
    expect(pdf.map((c) => [c.type, c.diffable])).toEqual([['text', false]])
    const long = 'word '.repeat(30_000)
    expect(comparePage(snapshot({ mainText: long }), snapshot({ mainText: `${long}more`, contentHash: 'h2' }))[0].diffable).toBe(false)
    expect(wordChanges('a b c', 'a x c')).toEqual({ wordsAdded: 1, wordsRemoved: 1 })
  })

  it('folds a change on most pages of a run into one site change, and leaves a few alone', () => {
    const titles = (n: number) =>
      Array.from({ length: n }, (_, i) => comparePage(snapshot({ path: `/p${i}` }), snapshot({ path: `/p${i}`, title: 'New' }))).flat()
    const folded = foldSiteWide(titles(6), 10)
    expect(folded).toHaveLength(1)
    expect(folded[0]).toMatchObject({ scope: 'site', type: 'title', pages: 6, path: '', diffable: false })
    expect(folded[0].samplePaths).toEqual(['/p0', '/p1', '/p2', '/p3', '/p4', '/p5'])
    // half the pages is not most of them; four pages are too few
    expect(foldSiteWide(titles(5), 10)).toHaveLength(5)
    expect(foldSiteWide(titles(4), 4)).toHaveLength(4)
  })
})

describe('the crawl queue', () => {
  it('survives a restart of the embedded store: due sites, pings and budgets are where they were', async () => {
    const dir = tempDir('crawl-queue')
    const open = () => {
      const raw = new EmbeddedRedis({ dir })
      return { raw, queue: new CrawlQueue(new Redis(rawRequester(raw))) }
    }
    const first = open()
    await first.queue.schedule('site-a', 2_000)
    await first.queue.schedule('site-b', 1_000)
    await first.queue.schedule('site-b', 5_000) // a later time never postpones an earlier one
    await first.queue.addPing('site-a', '/new-post', 1_500)
    await first.queue.spendBudget('site-a', '2026-11-02', 7)
    await first.raw.close()

    const second = open()
    expect(await second.queue.dueSites(3_000)).toEqual(['site-b', 'site-a'])
    expect(await second.queue.dueSites(1_500)).toEqual(['site-b'])
    expect(await second.queue.pings('site-a')).toEqual([{ path: '/new-post', atMs: 1_500 }])
    expect(await second.queue.budgetUsed('site-a', '2026-11-02')).toBe(7)
    await second.queue.forget('site-a')
    expect(await second.queue.dueSites(3_000)).toEqual(['site-b'])
    expect(await second.queue.pingCount('site-a')).toBe(0)
    await second.raw.close()
  })
})

describe('the guarded fetch as the crawler uses it', () => {
  it('answers the URL it ended at, and leaves redirects to the caller with redirect: manual', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/old') return void res.writeHead(301, { location: '/new' }).end()
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`at ${req.url}`)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const guarded = guardedFetch({ allowPrivate: true })
      const followed = await guarded(`${origin}/old`)
      expect([followed.status, followed.url, await followed.text()]).toEqual([200, `${origin}/new`, 'at /new'])
      const manual = await guarded(`${origin}/old`, { redirect: 'manual' })
      expect([manual.status, manual.headers.get('location'), manual.url]).toEqual([301, '/new', `${origin}/old`])
      // without the deployment's permission, loopback stays refused on every hop
      await expect(guardedFetch()(`${origin}/old`, { redirect: 'manual' })).rejects.toThrow(/private, loopback or link-local/)
    } finally {
      server.close()
    }
  })
})
