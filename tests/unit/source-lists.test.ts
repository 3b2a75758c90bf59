import { describe, expect, it } from 'vitest'
import {
  SEARCH_SOURCES,
  SOCIAL_SOURCES,
  type SourceList,
  VIDEO_SOURCES,
  channelFor,
  classifyReferrer,
  utmFrom,
} from '../../lib/ingest/enrich'

const channelOf = (query: string) => channelFor(classifyReferrer(null, 'site.test'), utmFrom(new URL(`https://site.test/?${query}`)))
const campaign = (source: string, medium = '') =>
  channelOf(`utm_source=${encodeURIComponent(source)}${medium ? `&utm_medium=${medium}` : ''}`)

/** Every way a source of a list is written in a campaign: its names, its hostnames and their subdomains. */
function spellings(list: SourceList): string[] {
  return [
    ...list.brands.flatMap((b) => [b, b.toUpperCase(), `${b}.com`, `www.${b}.co.uk`, `m.${b}.de`]),
    ...(list.names ?? []),
    ...(list.domains ?? []).flatMap((d) => [d, `m.${d}`]),
  ]
}
const video = new Set(spellings(VIDEO_SOURCES))

describe('campaign sources are matched as whole names and hostnames', () => {
  it('puts every search source in Organic Search, and in Paid Search with a paid medium', () => {
    for (const source of spellings(SEARCH_SOURCES)) {
      expect(campaign(source), source).toBe('Organic Search')
      expect(campaign(source, 'cpc'), source).toBe('Paid Search')
    }
  })

  it('puts every social source in Organic Social (video platforms in Organic Video), and in Paid Social with a paid medium', () => {
    for (const source of spellings(SOCIAL_SOURCES)) {
      expect(campaign(source), source).toBe(video.has(source) ? 'Organic Video' : 'Organic Social')
      expect(campaign(source, 'paid_social'), source).toBe('Paid Social')
    }
  })

  it('never matches a source inside a longer name or hostname', () => {
    // chatgpt.com holds "t.co", boxing holds "x", and so on: none of them is social or search
    expect(campaign('chatgpt.com')).toBe('AI assistants')
    for (const source of [
      'boxing',
      'xgoogle.com',
      'googler',
      'notfacebook.com',
      'bing-bong',
      'at.co',
      'reddit-clone.example',
      'bravely',
      'vkontakte-fan.example',
      'myyoutube.example',
      'hn-digest',
    ]) {
      expect(campaign(source), source).toBe('Unassigned')
    }
  })
})
