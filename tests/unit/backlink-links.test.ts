import { describe, expect, it } from 'vitest'
import { isOriginOnly, linkType, linksOnPage, tldOf, urlDomain } from '../../lib/backlinks/links'

/** Reading a referring page: each case's expectation written by hand from its HTML. */
describe('links on a referring page', () => {
  it('finds each link to the site once, with its anchor, rel, image and the title', () => {
    const html = `<html><head><title> A  list </title></head><body>
      <a href="https://acme.test/pricing#plans">Acme <b>pricing</b></a>
      <a href="https://acme.test/pricing">again</a>
      <a href="//www.acme.test/" rel="nofollow noopener"><img src="x.png" alt="Acme logo"></a>
      <a href="/relative">not ours</a>
      <a href="https://acme.test.evil.example/">lookalike</a>
      <a href="mailto:hi@acme.test">mail</a>
      <a href="https://acme.test/docs" rel="UGC nofollow">docs</a>
      <a href="https://acme.test/deal" rel="sponsored">deal</a>
    </body></html>`
    expect(linksOnPage(html, 'https://blog.example.org/post', 'acme.test')).toEqual({
      title: 'A list',
      links: [
        { targetUrl: 'https://acme.test/pricing', anchor: 'Acme pricing', rel: 'dofollow', image: false },
        { targetUrl: 'https://www.acme.test/', anchor: 'Acme logo', rel: 'nofollow', image: true },
        { targetUrl: 'https://acme.test/docs', anchor: 'docs', rel: 'ugc', image: false },
        { targetUrl: 'https://acme.test/deal', anchor: 'deal', rel: 'sponsored', image: false },
      ],
    })
  })

  it('makes every link nofollow on a page whose robots meta says nofollow', () => {
    const html =
      '<html><head><meta name="robots" content="index, nofollow"></head><body><a href="https://acme.test/">Acme</a></body></html>'
    expect(linksOnPage(html, 'https://x.example/', 'www.acme.test').links[0].rel).toBe('nofollow')
    expect(linkType('', 'none')).toBe('nofollow')
    expect(linkType('noopener noreferrer')).toBe('dofollow')
  })

  it('names referring domains, TLDs and origin-only referrers', () => {
    expect(urlDomain('https://WWW.News.Example.co.uk/a')).toBe('news.example.co.uk')
    expect(urlDomain('android-app://com.example')).toBeNull()
    expect(tldOf('news.example.co.uk')).toBe('uk')
    expect(tldOf('127.0.0.1:8080')).toBe('')
    expect(isOriginOnly('https://example.com/')).toBe(true)
    expect(isOriginOnly('https://example.com')).toBe(true)
    expect(isOriginOnly('https://example.com/post')).toBe(false)
    expect(isOriginOnly('https://example.com/?ref=1')).toBe(false)
  })
})
