import type { Context } from 'hono'
import type { Child } from 'hono/jsx'
import { asApiError } from '../invoke'
import { pageNonce } from './security'

/** The web application's stylesheet: one small block, inlined in every page (no request of its own). */
const STYLE = `
*{box-sizing:border-box}
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#f6f8fa;--accent:#0b57d0;--danger:#b42318}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;gap:1rem;align-items:center;justify-content:space-between;flex-wrap:wrap;padding:.75rem 1.25rem;background:#fff;border-bottom:1px solid var(--line)}
header .brand{font-weight:700;color:var(--fg);text-decoration:none}
header nav{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
main{max-width:1100px;margin:0 auto;padding:1.5rem 1.25rem}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:1.25rem;margin:0 0 1.25rem}
.narrow{max-width:440px;margin:3rem auto}
h1{font-size:1.5rem;margin:0 0 1rem}h2{font-size:1.15rem;margin:0 0 .75rem}
label{display:block;font-weight:600;margin:0 0 .25rem}
input,select{font:inherit;width:100%;padding:.55rem .65rem;border:1px solid #8c959f;border-radius:6px;background:#fff;color:var(--fg)}
button,.button{font:inherit;display:inline-block;padding:.5rem 1rem;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;text-decoration:none}
button.small{padding:.25rem .7rem;font-size:.9rem}
button.secondary{background:#fff;color:var(--accent)}button.danger{background:#fff;color:var(--danger);border-color:var(--danger)}
.field{margin:0 0 1rem}.muted{color:var(--muted)}.error{color:var(--danger);font-weight:600}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:.5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.85rem;color:var(--muted);font-weight:600}
.inline{display:inline}
a{color:var(--accent)}
.plain{list-style:none;margin:0;padding:0}.plain li{padding:.4rem 0;border-bottom:1px solid var(--line)}.plain li:last-child{border:0}
.row{display:flex;gap:.75rem;align-items:center;justify-content:space-between;flex-wrap:wrap}
.row select{width:auto}
.facts{display:grid;grid-template-columns:repeat(auto-fit,minmax(160px,1fr));gap:1rem;margin:0}.facts dt{color:var(--muted);font-size:.85rem}.facts dd{margin:0;font-size:1.2rem;font-weight:600}
.notice{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5rem .75rem}
.code{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:.75rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all;font-size:.85rem}
code.path{overflow-wrap:anywhere;word-break:break-all}
.created{border-color:#1a7f37;background:#f0fff4}
.danger-zone{border-color:#f1aeb5}
.org-nav{margin:0 0 1.25rem}.org-nav h1{margin:0 0 .5rem}.org-nav nav{display:flex;gap:1.25rem;flex-wrap:wrap}
.org-nav a[aria-current=page]{font-weight:700;color:var(--fg);text-decoration:none;border-bottom:2px solid var(--accent)}
.table-wrap{overflow-x:auto}
textarea{font:inherit;width:100%;padding:.55rem .65rem;border:1px solid #8c959f;border-radius:6px;background:#fff;color:var(--fg);resize:vertical}
input:disabled,select:disabled,textarea:disabled{background:var(--bg);color:var(--muted)}
.fields{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:0 1.5rem}.org-nav nav{row-gap:.4rem}.facts dd{overflow-wrap:anywhere}
.field.check{display:grid;grid-template-columns:auto 1fr;gap:0 .6rem;align-items:start}.field.check input{width:1.1rem;height:1.1rem;margin:.2rem 0 0}
.field.check label{font-weight:600;margin:0}.field.check .hint,.field.check .error{grid-column:2}
.hint{font-size:.85rem;margin:.25rem 0 0}.field .error{margin:.25rem 0 0}
.saved{color:#1a7f37;font-weight:600}.crumb{margin:0 0 .25rem}.spaced{margin-top:.75rem}.small-text{font-size:.85rem;margin:.2rem 0 0}
.state{display:inline-block;padding:0 .5rem;border-radius:999px;background:#eaeef2;font-size:.85rem;font-weight:600}
.state-done,.state-completed,.state-verified{background:#dafbe1;color:#116329}.state-failed,.state-wrong_target,.state-error{background:#ffebe9;color:#a40e26}
.state-running,.state-queued,.state-waiting,.state-pending{background:#fff8c5;color:#6a4d00}
.progress-cell,.nowrap{white-space:nowrap}progress{width:6rem;vertical-align:middle}.imports table{min-width:640px}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.dash-head{display:flex;gap:1rem;align-items:center;flex-wrap:wrap;margin:0 0 1rem}.dash-head h1{margin:0;flex:1 1 auto}
.dash-head select{width:auto}.live{margin:0;display:flex;align-items:center;gap:.4rem}
.dot{width:.6rem;height:.6rem;border-radius:50%;background:#1a7f37;display:inline-block}
.chips{list-style:none;display:flex;gap:.5rem;flex-wrap:wrap;padding:0;margin:0 0 1rem}
.chips a{display:inline-block;padding:.25rem .7rem;border-radius:999px;background:#ddf4ff;border:1px solid #54aeff;color:var(--fg);text-decoration:none}
.stats dd{font-size:1.4rem}.change{display:block;font-size:.85rem;font-weight:600;color:var(--muted)}.change.up{color:#1a7f37}.change.down{color:var(--danger)}
.chart{margin:1rem 0 0}.chart svg{width:100%;height:auto}.axis{font-size:12px;fill:#57606a}
.legend{font-size:.85rem;color:var(--muted)}.key{display:inline-block;width:.8rem;height:.2rem;vertical-align:middle;margin-left:.5rem}.key.visitors{background:#0b57d0}.key.pageviews{background:#9ec5fe}
.panels{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:1.25rem}.panel{margin:0}
.num{text-align:right;white-space:nowrap}
.bar{background:linear-gradient(90deg,#ddf4ff var(--share),transparent var(--share));word-break:break-all}
.bar a{color:var(--fg);text-decoration:none}.bar a:hover{text-decoration:underline}
.links{display:flex;gap:1rem}.controls{display:flex;gap:1rem 1.5rem;align-items:flex-end;flex-wrap:wrap;margin:0 0 1rem}.control{display:flex;gap:.5rem;align-items:flex-end;flex-wrap:wrap;margin:0}.control label,.control .label{font-size:.85rem;color:var(--muted);margin:0}.control select,.control input{width:auto}.control .chips{margin:0}.chips a.on{background:var(--accent);color:#fff}
.dates div{display:flex;flex-direction:column}
.tabs{display:flex;gap:.25rem 1rem;flex-wrap:wrap;margin:0 0 .75rem;font-size:.9rem}.tabs a[aria-current=page]{font-weight:700;color:var(--fg);text-decoration:none;border-bottom:2px solid var(--accent)}
.sections{display:flex;gap:.5rem 1.25rem;flex-wrap:wrap}.sections a[aria-current=page]{font-weight:700;color:var(--fg)}
.map{width:100%;height:auto;margin:0 0 .75rem}.markers summary{cursor:pointer}.pin{display:inline-block;width:.6rem;height:.6rem;border-radius:50%}
.diff{white-space:pre-wrap}.diff ins{background:#dafbe1;text-decoration:none}.diff del{background:#ffebe9}
caption.left{text-align:left;font-weight:600;padding:0 0 .5rem}.check{display:flex;gap:.5rem;align-items:center}.check input{width:auto}.check label{margin:0;font-weight:400}
.nested{margin:1rem 0 0}.read-value h3{font-size:1rem;margin:0 0 .5rem}.small{font-size:.85rem}
.control.card{margin:0 0 1.25rem;align-items:center}.panels+.card,.panels+section{margin-top:1.25rem}.spark{color:var(--accent);vertical-align:middle;max-width:100%}.empty{padding:.5rem 0}.empty p{margin:0 0 .25rem}
.minutes-fig{margin:1.25rem 0 0}.minutes{display:flex;align-items:flex-end;gap:2px;height:120px;border-bottom:1px solid var(--line)}.minute{flex:1 1 0;background:var(--accent);border-radius:2px 2px 0 0;min-width:0}
.axis-row{display:flex;justify-content:space-between;gap:.5rem;margin:.35rem 0 0}
.feed{list-style:none;margin:0;padding:0}.feed li{display:grid;grid-template-columns:5.5rem 5rem 1fr;gap:.1rem .6rem;padding:.45rem 0;border-bottom:1px solid var(--line);align-items:baseline}.feed li:last-child{border:0}
.feed time{color:var(--muted);font-size:.85rem;white-space:nowrap}.feed .what{overflow-wrap:anywhere;min-width:0}.feed .who{grid-column:3}
.kind{justify-self:start;display:inline-block;padding:0 .45rem;border-radius:999px;background:#eaeef2;font-size:.75rem;font-weight:600;white-space:nowrap}.kind-error{background:#ffebe9;color:#a40e26}.kind-click,.kind-outbound{background:#fff8c5;color:#6a4d00}.kind-pageview{background:#ddf4ff;color:#0a3069}
.badge{display:inline-block;padding:0 .5rem;border-radius:999px;font-size:.8rem;font-weight:600;background:#eaeef2;white-space:nowrap}.good{background:#dafbe1;color:#116329}.ni{background:#fff8c5;color:#6a4d00}.poor{background:#ffebe9;color:#a40e26}
.groups{list-style:none;margin:0;padding:0}.groups li{display:grid;grid-template-columns:1fr 6rem 6rem 120px;gap:.5rem 1rem;align-items:center;padding:.7rem 0;border-bottom:1px solid var(--line)}.groups li:last-child{border:0}
.group-main{display:flex;flex-direction:column;min-width:0}.group-title{font-weight:600;overflow-wrap:anywhere}.group-fig{text-align:right;white-space:nowrap}.error-message{white-space:pre-wrap;word-break:break-word;font-size:.95rem}
.vitals{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:0 1.25rem}.vital p{margin:.25rem 0}.vital-value .value{font-size:1.6rem;font-weight:700;margin-right:.4rem}
.stack{display:flex;height:.8rem;border-radius:4px;overflow:hidden;margin:.5rem 0 .25rem;background:#eaeef2}.stack .good{background:#1a7f37}.stack .ni{background:#d4a72c}.stack .poor{background:#cf222e}
.stack-key{display:flex;gap:.25rem 1rem;flex-wrap:wrap}.key-dot{display:inline-block;width:.6rem;height:.6rem;border-radius:2px;vertical-align:baseline}.key-dot.good{background:#1a7f37}.key-dot.ni{background:#d4a72c}.key-dot.poor{background:#cf222e}
.rated{padding:0 .3rem;border-radius:4px}.rated.good,.rated.ni,.rated.poor{font-weight:600}.cell-wrap{overflow-wrap:anywhere;word-break:break-word}
.sankey{width:100%;height:auto;display:block}.band{fill:none;stroke:#0b57d0;stroke-opacity:.18}.band:hover{stroke-opacity:.45}.node{fill:#0b57d0}.node.other{fill:#8c959f}.node-label{font-size:13px;fill:var(--fg);paint-order:stroke;stroke:#fff;stroke-width:3px}
.flow-picker div{display:flex;flex-direction:column}.flow-picker input{width:14rem;max-width:100%}
.journeys{list-style:none;margin:0;padding:0}.journeys li{display:grid;grid-template-columns:1fr auto;gap:.1rem 1rem;padding:.55rem 0;border-bottom:1px solid var(--line)}.journeys li>.small{grid-column:1/-1}
.journey-path{font-weight:600;overflow-wrap:anywhere;min-width:0}.journey-facts{white-space:nowrap;text-align:right}.pager{display:flex;justify-content:space-between;align-items:center;margin:.75rem 0}
.stack .base{background:#8c959f}.stack .extra{background:var(--accent)}.page-title{display:block;overflow-wrap:anywhere}.pages-table td{vertical-align:middle}
.bars td.bar{word-break:break-word;overflow-wrap:anywhere}
.series-chart{margin:.5rem 0 0}.series-chart .plot{position:relative;height:180px;margin:1.1rem 0 0 2.6rem}.series-chart .plot.two-axes{margin-right:2.6rem}
.series-chart svg{position:absolute;inset:0;width:100%;height:100%;overflow:visible}.series-chart .line{fill:none;stroke-width:2.5;vector-effect:non-scaling-stroke;stroke-linejoin:round}
.line.main{stroke:#0b57d0}.line.soft{stroke:#9ec5fe}.line.grey{stroke:#8c959f;stroke-dasharray:6 4}.line.warm{stroke:#bf8700}
.series-chart .grid{stroke:#eaeef2;vector-effect:non-scaling-stroke}.series-chart .base-line{stroke:#d0d7de;vector-effect:non-scaling-stroke}
.mark-line{stroke-dasharray:4 4;vector-effect:non-scaling-stroke;stroke:#8250df}.mark-line.poor{stroke:#cf222e}.mark-line.good{stroke:#1a7f37}.mark-line.ni{stroke:#bf8700}
.ylab{position:absolute;left:-2.6rem;width:2.3rem;text-align:right;font-size:.75rem;color:var(--muted);line-height:1;transform:translateY(-50%)}.ylab.top{top:0}.ylab.mid{top:50%}.ylab.bottom{top:100%}.ylab.right{left:auto;right:-2.6rem;text-align:left}
.pin-num{position:absolute;top:-1.1rem;white-space:nowrap;transform:translateX(-50%);min-width:1.1rem;height:1.1rem;padding:0 .2rem;border-radius:999px;background:#8250df;color:#fff;font-size:.7rem;font-weight:700;line-height:1.1rem;text-align:center}
.pin-num.poor{background:#cf222e}.pin-num.good{background:#1a7f37}.pin-num.ni{background:#9a6700}.pin-num.end{transform:translateX(-100%)}.pin-num.start{transform:none}.pin-num.static{position:static;display:inline-block;transform:none;margin-right:.35rem}
.hits{position:absolute;inset:0;display:grid}.hit{position:relative;outline-offset:-2px}.hit:hover,.hit:focus{background:rgba(11,87,208,.08)}
.hit:hover::after,.hit:focus::after{content:attr(data-tip);position:absolute;top:.25rem;left:50%;z-index:2;width:max-content;max-width:14rem;padding:.3rem .5rem;border-radius:6px;background:#1b1f24;color:#fff;font-size:.8rem;line-height:1.3;white-space:normal}
.hit.flip:hover::after,.hit.flip:focus::after{left:auto;right:50%}
.series-chart .axis-row{margin-left:2.6rem}.series-chart .axis-row.two-axes{margin-right:2.6rem}.legend-item{margin-right:1rem;white-space:nowrap}
.key-line{display:inline-block;width:1rem;height:0;border-top:3px solid #0b57d0;vertical-align:middle}.key-line.soft{border-color:#9ec5fe}.key-line.grey{border-top-style:dashed;border-color:#8c959f}.key-line.warm{border-color:#bf8700}
.marker-list{list-style:none;margin:.75rem 0 0;padding:0;font-size:.9rem}.marker-list>li{padding:.2rem 0;overflow-wrap:anywhere;display:grid;grid-template-columns:auto auto 1fr;gap:.35rem;align-items:baseline}.marker-list .evidence{margin:0}
.change-feed{list-style:none;margin:0;padding:0}.change-feed li{padding:.75rem 0;border-bottom:1px solid var(--line)}.change-feed li:last-child{border:0}
.change-head{display:flex;gap:.25rem .75rem;flex-wrap:wrap;align-items:baseline}.change-head time{color:var(--muted);font-size:.85rem}.change-summary{margin:.3rem 0;overflow-wrap:anywhere}
.change-feed .diff{margin:.3rem 0;padding:.5rem .65rem;background:var(--bg);border-radius:6px;overflow-wrap:anywhere}.change-feed p.small{margin:.2rem 0 0}
th[aria-sort] a{color:var(--fg);text-decoration:none}th[aria-sort] a::after{content:" ▾"}
.cause-cards{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}.cause-card{border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem}.cause-card p{margin:.35rem 0}.cause-card .row{flex-wrap:nowrap;align-items:baseline}.cause-card .row>a{min-width:0}
.evidence{margin:.25rem 0 0;padding-left:1.1rem;font-size:.9rem}.evidence li{margin:.15rem 0;overflow-wrap:anywhere}.evidence del{background:#ffebe9}.evidence ins{background:#dafbe1;text-decoration:none}.marker-list del{background:#ffebe9}.marker-list ins{background:#dafbe1;text-decoration:none}
.against-peak{max-width:28rem}.vs-median{display:flex;gap:.5rem;align-items:center;min-width:9rem}.vs-median .stack{flex:1;margin:0}.launches-table td{vertical-align:middle}.goal-name{min-width:6rem;overflow-wrap:break-word}
@media (max-width:600px){.spikes .stack{grid-column:1/-1}.opt{display:none}.vitals-table td,.vitals-table th{font-size:.85rem}.groups li{grid-template-columns:1fr 1fr}.group-main{grid-column:1/-1}.group-fig{text-align:left}.feed li{grid-template-columns:5rem 1fr}.feed .what,.feed .who{grid-column:1/-1}}
@media (max-width:600px){.stats{grid-template-columns:repeat(2,1fr)}.stats dd{font-size:1.2rem}main{padding:1rem .75rem}header{padding:.6rem .75rem}header nav{gap:.6rem;font-size:.9rem}.narrow{margin:1.5rem auto}td,th{padding:.4rem .25rem}}
`

export interface PageProps {
  title: string
  /** The signed-in address, shown with the sign-out button. */
  email?: string
  children?: Child
}

/** Every page of the web application: the header (with sign-out when signed in) and the content. */
export function Page({ title, email, children }: PageProps) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>{`${title} · Analytics`}</title>
        <link rel="icon" type="image/svg+xml" href="/app/favicon.svg" />
        <style nonce={pageNonce()} dangerouslySetInnerHTML={{ __html: STYLE }} />
      </head>
      <body>
        <header>
          <a class="brand" href="/app">
            Analytics
          </a>
          {email ? (
            <nav aria-label="Account">
              <a href="/app/sessions">Sessions</a>
              <span class="muted">{email}</span>
              <form method="post" action="/app/signout" class="inline">
                <button type="submit" class="secondary small">
                  Sign out
                </button>
              </form>
            </nav>
          ) : null}
        </header>
        <main>{children}</main>
      </body>
    </html>
  )
}

/**
 * Submits the form of a select marked `data-submit-on-change` when its value changes: the policy
 * refuses inline event handlers (`onchange=`), so this nonce'd script attaches them. Placed after the selects.
 */
export function SubmitOnChange() {
  return (
    <script
      nonce={pageNonce()}
      dangerouslySetInnerHTML={{
        __html:
          "document.querySelectorAll('select[data-submit-on-change]').forEach(function(s){s.addEventListener('change',function(){s.form.submit()})})",
      }}
    />
  )
}

/** A page that says what went wrong, for the browser (the API answers JSON). */
export function ErrorPage({ status, message, email }: { status: number; message: string; email?: string }) {
  const title =
    status === 404
      ? 'Not found'
      : status === 429
        ? 'Too many requests'
        : status === 403
          ? 'Not allowed'
          : status === 503
            ? 'Briefly unavailable'
            : 'Something went wrong'
  return (
    <Page title={title} email={email}>
      <div class="card narrow">
        <h1>{title}</h1>
        <p class="error" role="alert">
          {message}
        </p>
        <p>
          <a href={email ? '/app' : '/app/signin'}>{email ? 'Back to your account' : 'Sign in'}</a>
        </p>
      </div>
    </Page>
  )
}

/**
 * Any failure of a page as its error page, with the status and headers the API would answer
 * (asApiError): a store outage is 503 with Retry-After, so a browser or a proxy knows to come back.
 */
export function failurePage(c: Context, err: unknown, email?: string) {
  const failure = asApiError(err, c.req.raw)
  for (const [name, value] of Object.entries(failure.headers)) c.header(name, value)
  const retryAfter = failure.status === 503 ? failure.headers['Retry-After'] : undefined
  // the store's name and state mean nothing to a visitor: what to do does
  const message = retryAfter ? `The service is briefly unavailable; try again in ${retryAfter} seconds.` : failure.message
  return c.html(<ErrorPage status={failure.status} message={message} email={email} />, failure.status)
}
