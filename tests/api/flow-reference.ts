/**
 * The behaviour flow worked out from visits' page sequences (each visit's pages in the window in
 * time order, a page repeated right after itself once), independently of the engine.
 */

/** The flow over the sequences, folded to `limit` pages a step (most visits, ties to the smaller path). */
export function expectedFlow(sequences: string[][], anchor: string | null, before: number, after: number, limit: number) {
  const cells: { step: number; path: string; next: string }[] = []
  for (const seq of sequences) {
    const a = anchor === null ? 0 : seq.indexOf(anchor)
    if (a < 0) continue
    for (let k = -before; k <= after; k++) {
      if (a + k < 0 || a + k >= seq.length) continue
      cells.push({ step: k, path: seq[a + k], next: k < after && a + k + 1 < seq.length ? seq[a + k + 1] : '' })
    }
  }
  const kept = new Map<number, string[]>()
  for (const step of new Set(cells.map((c) => c.step))) {
    const counts = new Map<string, number>()
    for (const c of cells.filter((c) => c.step === step)) counts.set(c.path, (counts.get(c.path) ?? 0) + 1)
    kept.set(
      step,
      [...counts]
        .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
        .slice(0, limit)
        .map(([p]) => p),
    )
  }
  const id = (step: number, path: string) => `${step}:${kept.get(step)!.includes(path) ? path : '(other)'}`
  const nodes = new Map<string, number>()
  const links = new Map<string, number>()
  for (const c of cells) {
    nodes.set(id(c.step, c.path), (nodes.get(id(c.step, c.path)) ?? 0) + 1)
    if (c.next)
      links.set(
        `${id(c.step, c.path)} -> ${id(c.step + 1, c.next)}`,
        (links.get(`${id(c.step, c.path)} -> ${id(c.step + 1, c.next)}`) ?? 0) + 1,
      )
  }
  return { visits: cells.filter((c) => c.step === 0).length, nodes: Object.fromEntries(nodes), links: Object.fromEntries(links) }
}

export type FlowAnswer = {
  visits: number
  nodes: { id: string; step: number; path: string; other: boolean; visits: number; folded: number }[]
  links: { source: string; target: string; visits: number }[]
}
export const flowAsMaps = (json: FlowAnswer) => ({
  visits: json.visits,
  nodes: Object.fromEntries(json.nodes.map((n) => [n.id, n.visits])),
  links: Object.fromEntries(json.links.map((l) => [`${l.source} -> ${l.target}`, l.visits])),
})
