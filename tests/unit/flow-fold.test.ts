import { describe, expect, it } from 'vitest'
import { foldFlow } from '../../lib/query/journeys'

describe('foldFlow', () => {
  // step 0: /a 5 visits, /b 3, /c 1, /d 1; step 1: /x 4, /y 2 (worked by hand)
  const cells = [
    { step: 0, path: '/a', next: '/x', visits: 3 },
    { step: 0, path: '/a', next: '', visits: 2 },
    { step: 0, path: '/b', next: '/y', visits: 2 },
    { step: 0, path: '/b', next: '/x', visits: 1 },
    { step: 0, path: '/c', next: '', visits: 1 },
    { step: 0, path: '/d', next: '/x', visits: 1 },
    { step: 1, path: '/x', next: '', visits: 5 },
    { step: 1, path: '/y', next: '', visits: 2 },
  ]

  it('keeps the limit most visited pages of each step and folds the rest into one node with their links', () => {
    const { nodes, links } = foldFlow(cells, 2)
    expect(nodes).toEqual([
      { id: '0:/a', step: 0, path: '/a', other: false, visits: 5, folded: 0 },
      { id: '0:/b', step: 0, path: '/b', other: false, visits: 3, folded: 0 },
      { id: '0:(other)', step: 0, path: '(other)', other: true, visits: 2, folded: 2 },
      { id: '1:/x', step: 1, path: '/x', other: false, visits: 5, folded: 0 },
      { id: '1:/y', step: 1, path: '/y', other: false, visits: 2, folded: 0 },
    ])
    expect(links).toEqual([
      { source: '0:/a', target: '1:/x', visits: 3 },
      { source: '0:/b', target: '1:/y', visits: 2 },
      { source: '0:(other)', target: '1:/x', visits: 1 },
      { source: '0:/b', target: '1:/x', visits: 1 },
    ])
  })

  it('breaks ties in visits by the smaller path', () => {
    const { nodes } = foldFlow([{ step: 0, path: '/z', next: '', visits: 1 }, { step: 0, path: '/m', next: '', visits: 1 }], 1)
    expect(nodes.map((n) => n.id)).toEqual(['0:/m', '0:(other)'])
  })
})
