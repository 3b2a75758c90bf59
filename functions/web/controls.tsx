import { RANGE_LABELS } from './format'

/**
 * The range and data-source pickers of the dashboard and its sections: each a GET form back to the
 * page, a select that submits as it changes (SubmitOnChange in layout.tsx; a button without
 * script), carrying the rest of the page's parameters (`kept`) as hidden inputs.
 */

/** A page's parameters, some unset. */
type Params = Record<string, string | undefined>

/** The parameters a form does not set itself, as hidden inputs, so submitting it keeps the rest of the view. */
function Kept({ params, except }: { params: Params; except: string[] }) {
  return (
    <>
      {Object.entries(params)
        .filter(([k, v]) => v !== undefined && !except.includes(k))
        .map(([k, v]) => (
          <input type="hidden" name={k} value={v} />
        ))}
    </>
  )
}

const NoScriptSubmit = () => (
  <noscript>
    <button type="submit" class="small">
      Show
    </button>
  </noscript>
)

/**
 * The range: a named one, or custom dates (the current ones shown when the range is custom).
 * `realtime` offers the last 5 minutes as well (the dashboard's, not the sections').
 */
export function RangePicker({
  action,
  range,
  from,
  to,
  params,
  realtime = true,
}: {
  action: string
  range: string
  from?: string
  to?: string
  params: Params
  realtime?: boolean
}) {
  const own = ['range', 'from', 'to']
  return (
    <>
      <form method="get" action={action} class="control">
        <label for="range">Range</label>
        <select id="range" name="range" data-submit-on-change>
          {Object.entries(RANGE_LABELS)
            .filter(([value]) => realtime || value !== 'realtime')
            .map(([value, label]) => (
              <option value={value} selected={value === range}>
                {label}
              </option>
            ))}
          {range === 'custom' ? (
            <option value="custom" selected>
              {`${from} to ${to}`}
            </option>
          ) : null}
        </select>
        <Kept params={params} except={own} />
        <NoScriptSubmit />
      </form>
      <form method="get" action={action} class="control dates">
        <input type="hidden" name="range" value="custom" />
        <div>
          <label for="from">From</label>
          <input id="from" name="from" type="date" required value={range === 'custom' ? from : undefined} />
        </div>
        <div>
          <label for="to">To</label>
          <input id="to" name="to" type="date" required value={range === 'custom' ? to : undefined} />
        </div>
        <Kept params={params} except={own} />
        <button type="submit" class="small secondary">
          Apply dates
        </button>
      </form>
    </>
  )
}

/** The data source of a site with more than one: first-party events or imported GA4 data. */
export function SourcePicker({
  action,
  sources,
  source,
  params,
}: {
  action: string
  sources: readonly string[]
  source: string
  params: Params
}) {
  return (
    <form method="get" action={action} class="control">
      <label for="source">Data</label>
      <select id="source" name="source" data-submit-on-change>
        {sources.map((s) => (
          <option value={s} selected={s === source}>
            {s === 'ga4' ? 'Google Analytics 4' : 'First-party'}
          </option>
        ))}
      </select>
      <Kept params={params} except={['source']} />
      <NoScriptSubmit />
    </form>
  )
}
