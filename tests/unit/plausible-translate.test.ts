import { describe, expect, it } from 'vitest'
import { countryName, literalPattern, translateFilters } from '../../lib/plausible/translate'
import type { Goal } from '../../lib/sites/goals'

const goal = (name: string): Goal => ({
  id: name,
  name,
  type: 'event',
  matchValue: name,
  currency: null,
  createdAt: '2026-01-01T00:00:00Z',
})
const GOALS = [goal('Signup'), goal('Visit /blog*'), goal('Purchase')]

describe("Plausible's v2 filters as the pipeline's", () => {
  it('a literal pattern matches its text exactly, metacharacters included', () => {
    for (const text of ['/a.b', '/(x)?', '[utm]', 'a+b*c', '^$|\\', '{1,2}'])
      expect(new RegExp(`^${literalPattern(text)}$`).test(text), text).toBe(true)
    expect(new RegExp(literalPattern('/a.b')).test('/axb')).toBe(false)
  })

  it('operators keep Plausible case rules: contains is case-sensitive unless told otherwise', () => {
    expect(translateFilters([['contains', 'event:page', ['Blog']]], 'standalone', [])).toEqual([
      { dimension: 'path', operator: 'matches', value: ['Blog'] },
    ])
    expect(translateFilters([['contains', 'event:page', ['Blog'], { case_sensitive: false }]], 'standalone', [])).toEqual([
      { dimension: 'path', operator: 'contains', value: ['Blog'] },
    ])
    expect(translateFilters([['is_not', 'visit:source', ['a.b'], { case_sensitive: false }]], 'standalone', [])).toEqual([
      { dimension: 'source', operator: 'matches_not', value: ['(?i)^a\\.b$'] },
    ])
  })

  it('and flattens, or merges clauses of one dimension, not negates, has_done wraps an event filter', () => {
    const filters = [
      [
        'and',
        [
          ['is', 'visit:country', ['US']],
          [
            'or',
            [
              ['is', 'event:name', ['A']],
              ['is', 'event:name', ['B']],
            ],
          ],
        ],
      ],
      ['not', ['matches', 'event:page', ['^/x']]],
      ['has_not_done', ['is', 'event:props:plan', ['pro']]],
    ]
    expect(translateFilters(filters, 'standalone', [])).toEqual([
      { dimension: 'country', operator: 'is', value: ['US'] },
      { dimension: 'event', operator: 'is', value: ['A', 'B'] },
      { dimension: 'path', operator: 'matches_not', value: ['^/x'] },
      { dimension: 'has_not_done', operator: 'is', value: ['prop:plan', 'pro'] },
    ])
  })

  it('or across dimensions and not around several filters become groups of AND-ed filters; not of a group negates it', () => {
    const or = [
      'or',
      [
        ['is', 'event:page', ['/a']],
        [
          'and',
          [
            ['is', 'visit:source', ['Google']],
            ['is_not', 'visit:device', ['Mobile']],
          ],
        ],
      ],
    ]
    const groups = [
      [{ dimension: 'path', operator: 'is', value: ['/a'] }],
      [
        { dimension: 'source', operator: 'is', value: ['Google'] },
        { dimension: 'device', operator: 'is_not', value: ['Mobile'] },
      ],
    ]
    expect(translateFilters([or], 'standalone', [])).toEqual([{ dimension: 'filter_groups', operator: 'is', value: [], groups }])
    expect(translateFilters([['not', or]], 'standalone', [])).toEqual([
      { dimension: 'filter_groups', operator: 'is_not', value: [], groups },
    ])
    // not around two filters: one negated group holding both
    expect(translateFilters([['not', ['and', [or[1][0], ['is', 'visit:os', ['iOS']]]]]], 'standalone', [])).toEqual([
      {
        dimension: 'filter_groups',
        operator: 'is_not',
        value: [],
        groups: [
          [
            { dimension: 'path', operator: 'is', value: ['/a'] },
            { dimension: 'os', operator: 'is', value: ['iOS'] },
          ],
        ],
      },
    ])
    // imported data is filtered by AND-ed filters only
    expect(() => translateFilters([or], 'ga4', [])).toThrow(/filters\[0\]: an "or" across dimensions .* needs the tracker source/)
  })

  it('goal filters become the names of the goals they select', () => {
    expect(translateFilters([['contains', 'event:goal', ['up']]], 'standalone', GOALS)).toEqual([
      { dimension: 'goal', operator: 'is', value: ['Signup'] },
    ])
    expect(
      translateFilters(
        [['has_not_done', ['matches', 'event:goal', ['^(signup|purchase)$'], { case_sensitive: false }]]],
        'standalone',
        GOALS,
      ),
    ).toEqual([{ dimension: 'goal', operator: 'is_not', value: ['Signup', 'Purchase'] }])
    expect(() => translateFilters([['is', 'event:goal', ['signup']]], 'standalone', GOALS)).toThrow(/goal "signup" is not configured/)
  })

  it('goal and segment filters inside or and not: in groups where they stand, a segment never merged or negated by operator', () => {
    const goalOrPage = [
      'or',
      [
        ['is', 'event:goal', ['Signup']],
        ['is', 'event:page', ['/a']],
      ],
    ]
    expect(translateFilters([goalOrPage], 'standalone', GOALS)).toEqual([
      {
        dimension: 'filter_groups',
        operator: 'is',
        value: [],
        groups: [[{ dimension: 'goal', operator: 'is', value: ['Signup'] }], [{ dimension: 'path', operator: 'is', value: ['/a'] }]],
      },
    ])
    // not around a goal: the visits that converted none of its goals
    expect(translateFilters([['not', ['is', 'event:goal', ['Signup']]]], 'standalone', GOALS)).toEqual([
      { dimension: 'goal', operator: 'is_not', value: ['Signup'] },
    ])
    // not around a segment: a negated group holding it (the segment's filters are put in its place when the query runs)
    expect(translateFilters([['not', ['is', 'segment', ['s1']]]], 'standalone', GOALS)).toEqual([
      { dimension: 'filter_groups', operator: 'is_not', value: [], groups: [[{ dimension: 'segment', operator: 'is', value: ['s1'] }]] },
    ])
    // an or of two segments stays two groups: a segment filter names one segment
    expect(
      translateFilters(
        [
          [
            'or',
            [
              ['is', 'segment', ['s1']],
              ['is', 'segment', ['s2']],
            ],
          ],
        ],
        'standalone',
        GOALS,
      ),
    ).toEqual([
      {
        dimension: 'filter_groups',
        operator: 'is',
        value: [],
        groups: [[{ dimension: 'segment', operator: 'is', value: ['s1'] }], [{ dimension: 'segment', operator: 'is', value: ['s2'] }]],
      },
    ])
  })

  it('country names become the codes of the countries they name', () => {
    expect(countryName('DE')).toBe('Germany')
    expect(translateFilters([['is', 'visit:country_name', ['germany', 'France'], { case_sensitive: false }]], 'standalone', [])).toEqual([
      { dimension: 'country', operator: 'is', value: ['DE', 'FR'] },
    ])
  })

  it('the ga4 source refuses what its imports do not hold, naming it as the query did', () => {
    expect(() => translateFilters([['is', 'visit:exit_page', ['/']]], 'ga4', [])).toThrow(
      /filters\[0\]: visit:exit_page cannot be answered from the ga4 source/,
    )
    expect(() => translateFilters([['has_done', ['is', 'event:name', ['A']]]], 'ga4', [])).toThrow(/has_done needs the tracker source/)
  })
})
