import type { AnswerOf } from '../api'
import { count, percent } from '../format'
import { Empty, type SectionProps, Unavailable } from './parts'

/** A page at a step of the flow, or the pages folded into "other". */
type FlowNode = AnswerOf<'GET', '/api/v1/flow'>['nodes'][number]
/** The visits from one node to the next step's. */
type FlowLink = AnswerOf<'GET', '/api/v1/flow'>['links'][number]

const W = 1000
const NODE = 10
const GAP = 16

/**
 * A Sankey layout of the flow's steps: a column a step, each page a bar as tall as its visits,
 * the links as bands between them, ordered by where they lead so that they cross as little as they can.
 */
function layout(nodes: FlowNode[], links: FlowLink[]) {
  const steps = [...new Set(nodes.map((n) => n.step))].sort((a, b) => a - b)
  const columns = steps.map((s) =>
    nodes.filter((n) => n.step === s).sort((a, b) => Number(a.other) - Number(b.other) || b.visits - a.visits),
  )
  const tallest = Math.max(...columns.map((c) => c.length))
  const height = Math.max(240, tallest * 36)
  const scale = Math.min(
    ...columns.map(
      (c) =>
        (height - GAP * (c.length - 1)) /
        Math.max(
          1,
          c.reduce((s, n) => s + n.visits, 0),
        ),
    ),
  )
  const at = new Map<string, { x: number; y: number; h: number; node: FlowNode; out: number; in: number }>()
  const span = steps.length > 1 ? (W - NODE - 200) / (steps.length - 1) : 0
  columns.forEach((column, i) => {
    let y = 0
    for (const node of column) {
      const h = Math.max(1, node.visits * scale)
      at.set(node.id, { x: i * span, y, h, node, out: 0, in: 0 })
      y += h + GAP
    }
  })
  const ordered = [...links].sort((a, b) => at.get(a.source)!.y - at.get(b.source)!.y || at.get(a.target)!.y - at.get(b.target)!.y)
  const bands = ordered
    .filter((l) => at.has(l.source) && at.has(l.target))
    .map((l) => {
      const s = at.get(l.source)!
      const t = at.get(l.target)!
      const w = Math.max(0.5, l.visits * scale)
      const y0 = s.y + s.out + w / 2
      s.out += w
      const y1 = t.y + t.in + w / 2
      t.in += w
      const x0 = s.x + NODE
      const x1 = t.x
      const mid = (x0 + x1) / 2
      return {
        link: l,
        w,
        d: `M${x0.toFixed(1)},${y0.toFixed(1)}C${mid.toFixed(1)},${y0.toFixed(1)} ${mid.toFixed(1)},${y1.toFixed(1)} ${x1.toFixed(1)},${y1.toFixed(1)}`,
      }
    })
  return { at, bands, height, steps, columns, span }
}

const nameOf = (n: FlowNode) => (n.other ? `${count(n.folded)} other pages` : n.path)
const stepName = (step: number, anchor: string) =>
  step === 0
    ? anchor === 'entry'
      ? 'Landing page'
      : 'The page'
    : step > 0
      ? `${step} ${step === 1 ? 'step' : 'steps'} after`
      : `${-step} ${step === -1 ? 'step' : 'steps'} before`

/** The flow section: where visits go from page to page, as a Sankey diagram, and each step's pages as a list. */
export function Flow({ answers, query, at: link }: SectionProps<[AnswerOf<'GET', '/api/v1/flow'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="Page flows" />
  const nodes: FlowNode[] = answer.nodes
  const links: FlowLink[] = answer.links
  const picker = (
    <form method="get" class="control card flow-picker">
      {Object.entries(query)
        .filter(([k]) => !['start_path', 'focus_path', 'depth'].includes(k))
        .map(([k, v]) => (
          <input type="hidden" name={k} value={v} />
        ))}
      <div>
        <label for="start_path">Start at</label>
        <input id="start_path" name="start_path" placeholder="every landing page" value={query.start_path ?? ''} />
      </div>
      <div>
        <label for="focus_path">Or around</label>
        <input id="focus_path" name="focus_path" placeholder="a page, e.g. /pricing" value={query.focus_path ?? ''} />
      </div>
      <div>
        <label for="depth">Steps</label>
        <select id="depth" name="depth">
          {[1, 2, 3, 4, 5].map((d) => (
            <option value={String(d)} selected={String(d) === String(answer.depth)}>
              {d}
            </option>
          ))}
        </select>
      </div>
      <button type="submit" class="small">
        Show
      </button>
    </form>
  )
  if (!nodes.length)
    return (
      <>
        {picker}
        <section class="card" data-read="/api/v1/flow">
          <Empty
            why={answer.path ? `No visits through ${answer.path} in this range.` : 'No visits in this range.'}
            next="Pick a longer range, or another page: paths start with a slash, as in /pricing."
          />
        </section>
      </>
    )
  const { at, bands, height, steps, columns, span } = layout(nodes, links)
  // a label stays within its column's room (about 7 units a character); the node's title has it whole
  const room = steps.length > 1 ? Math.max(8, Math.floor((span - NODE - 10) / 7)) : 60
  const clip = (text: string) => (text.length > room ? `${text.slice(0, room - 1)}…` : text)
  const outgoing = new Map<string, number>()
  for (const l of links) outgoing.set(l.source, (outgoing.get(l.source) ?? 0) + l.visits)
  const last = steps[steps.length - 1]
  return (
    <>
      {picker}
      <section class="card" aria-labelledby="flow-title" data-read="/api/v1/flow">
        <h2 id="flow-title">
          {count(answer.visits)} visits{' '}
          {answer.path ? (answer.anchor === 'focus' ? `around ${answer.path}` : `from ${answer.path}`) : 'from their landing page'}
        </h2>
        <svg
          class="sankey"
          viewBox={`-2 -2 ${W + 4} ${height + 4}`}
          role="img"
          aria-label="Sankey diagram of the visits' paths; each step is listed below"
        >
          {bands.map((b) => (
            <path d={b.d} stroke-width={b.w.toFixed(1)} class="band">
              <title>{`${nameOf(at.get(b.link.source)!.node)} → ${nameOf(at.get(b.link.target)!.node)}: ${count(b.link.visits)} visits`}</title>
            </path>
          ))}
          {[...at.values()].map((n) => {
            return (
              <g>
                <rect x={n.x} y={n.y} width={NODE} height={n.h} class={n.node.other ? 'node other' : 'node'}>
                  <title>{`${nameOf(n.node)}: ${count(n.node.visits)} visits`}</title>
                </rect>
                <text x={n.x + NODE + 4} y={n.y + n.h / 2} dy="0.35em" class="node-label">
                  {clip(`${nameOf(n.node)} ${count(n.node.visits)}`)}
                </text>
              </g>
            )
          })}
        </svg>
      </section>
      <div class="panels">
        {columns.map((column, i) => (
          <section class="card panel" aria-label={stepName(steps[i], answer.anchor)} data-step={steps[i]}>
            <h2>{stepName(steps[i], answer.anchor)}</h2>
            <table class="bars">
              <thead>
                <tr>
                  <th scope="col">Page</th>
                  <th scope="col" class="num">
                    Visits
                  </th>
                  {steps[i] >= 0 && steps[i] < last ? (
                    <th scope="col" class="num">
                      Left
                    </th>
                  ) : null}
                </tr>
              </thead>
              <tbody>
                {column.map((n) => (
                  <tr data-node={n.id} style={`--share:${((n.visits / Math.max(1, column[0].visits)) * 100).toFixed(1)}%`}>
                    <td class="bar">
                      {n.other ? nameOf(n) : <a href={link('flow', { focus_path: n.path, depth: String(answer.depth) })}>{n.path}</a>}
                    </td>
                    <td class="num">{count(n.visits)}</td>
                    {steps[i] >= 0 && steps[i] < last ? (
                      <td class="num muted" title="Visits that ended on this page here">
                        {percent(Math.max(0, n.visits - (outgoing.get(n.id) ?? 0)) / Math.max(1, n.visits))}
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        ))}
      </div>
    </>
  )
}
