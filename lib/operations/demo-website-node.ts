import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * The demo site's website, served by the Node server itself on loopback, so that the crawler,
 * the page inventory and change detection have real pages to read. It has two editions: the
 * first crawl reads `before`, later ones `after` (a price, a title and a text rewritten, a page
 * added, one gone), which the changes read shows with word diffs.
 */
export type DemoEdition = 'before' | 'after'

/** A page of the website, with the demo site's tracking snippet in its head (the install check looks for it there). */
const pageOf = (snippet: string) => (title: string, description: string, text: string, links: string[]) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} | Demo</title><meta name="description" content="${description}">${snippet}</head><body><nav>${links.map((href) => `<a href="${href}">${href}</a>`).join(' ')}</nav><main><h1>${title}</h1><p>${text}</p></main></body></html>`

const NAV = ['/', '/pricing', '/blog', '/docs', '/about']

function pages(edition: DemoEdition, snippet: string): Record<string, string> {
  const page = pageOf(snippet)
  const after = edition === 'after'
  const all: Record<string, string> = {
    '/': page(
      'Privacy-first analytics',
      'Simple analytics without cookies',
      'Count visitors, sources and goals without cookies or personal data. Set up in two minutes.',
      NAV,
    ),
    '/pricing': page(
      'Pricing',
      'Plans and prices',
      after
        ? 'Plans start at twelve euros a month, billed yearly, with a free trial of thirty days and every feature included.'
        : 'Plans start at nine euros a month, with a free trial of fourteen days.',
      NAV,
    ),
    '/blog': page('Blog', 'News and guides', 'Launch week, privacy and how we count visitors.', [
      ...NAV,
      '/blog/launch-week',
      '/blog/privacy-first-analytics',
    ]),
    '/blog/launch-week': page(
      after ? 'Launch week: five new features' : 'Launch week',
      'What shipped during launch week',
      'Realtime, funnels, vitals, change detection and an API for agents shipped this week.',
      NAV,
    ),
    '/blog/privacy-first-analytics': page(
      'Privacy-first analytics',
      'Why we count without cookies',
      'A daily salted hash replaces cookies, and no address is ever stored.',
      NAV,
    ),
    '/docs': page('Documentation', 'Get started', 'Add one script tag, then read your reports over the API.', [...NAV, '/docs/api']),
    '/about': page(
      'About',
      after ? 'The team behind the demo' : 'About us',
      'A small team that builds analytics for people who care.',
      NAV,
    ),
  }
  if (after) all['/docs/api'] = page('API reference', 'Every endpoint', 'Each read answers JSON; a key in the header is all it takes.', NAV)
  else all['/blog/old-announcement'] = page('An old announcement', 'Old news', 'This post is retired before the next crawl.', NAV)
  return all
}

export interface DemoWebsite {
  /** http://127.0.0.1:<port> */
  origin: string
  edition: DemoEdition
  close(): Promise<void>
}

/** The website on a free loopback port; `snippet` is the demo site's tracking snippet, put in every page's head. */
export async function startDemoWebsite(edition: DemoEdition = 'after', snippet = ''): Promise<DemoWebsite> {
  const site: DemoWebsite = { origin: '', edition, close: async () => {} }
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://demo').pathname
    const current = pages(site.edition, snippet)
    if (path === '/robots.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end(`User-agent: *\nAllow: /\n`)
    if (path === '/sitemap.xml')
      return void res.writeHead(200, { 'content-type': 'application/xml' }).end(
        `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${Object.keys(current)
          .map((p) => `<url><loc>${site.origin}${p}</loc></url>`)
          .join('')}</urlset>`,
      )
    const body = current[path]
    if (!body) return void res.writeHead(404, { 'content-type': 'text/html' }).end('<title>Not found</title>')
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  server.unref()
  site.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  site.close = () => new Promise((resolve) => server.close(() => resolve()))
  return site
}
