import type { Context } from 'hono'
import type { Child } from 'hono/jsx'
import { requireRole } from '../../../lib/accounts/members'
import { ApiError } from '../../../lib/core/errors'
import type { Services } from '../../../lib/runtime/services'
import type { Site } from '../../../lib/sites/sites'
import { asApiError } from '../../invoke'
import { ADMINS, type Api, apiFor } from '../api'
import { memberOf } from '../membership'
import { pageNonce } from '../security'
import type { WebEnv } from '../session'

/**
 * What the site's settings pages share (one file a tab beside this one: general, alerts, domain,
 * integrations): the settings groups drawn as forms, the site's navigation, and how a post's refusal
 * comes back. Every read and write goes through the API's own endpoint (its validation, its verb,
 * its 4xx message), called as the signed-in member (api.ts): owners and admins write, members read.
 */

/** The current values of a form's fields by name, as the API's read answers them. */
export type Values = Record<string, unknown>

/** A field of a settings form: how it is drawn and how its posted text becomes the API's value. */
export interface FieldSpec {
  name: string
  label: string
  kind: 'check' | 'lines' | 'text' | 'optional-text' | 'number' | 'select'
  options?: readonly (readonly [string, string])[]
  hint?: string
}

export interface FormGroup<A> {
  id: string
  title: string
  intro?: string
  fields: FieldSpec[]
  /** The current values, from the API's read `A`. */
  values: (answer: A) => Values
}

export const check = (name: string, label: string, hint?: string): FieldSpec => ({ name, label, kind: 'check', hint })
export const lines = (name: string, label: string, hint: string): FieldSpec => ({ name, label, kind: 'lines', hint })

/** The posted text of a form as the API's values; only the fields that differ from `current` (PATCH sends what changes). */
export function changedFields(fields: FieldSpec[], form: Record<string, string>, current: Values): Values {
  const body: Values = {}
  for (const field of fields) {
    const raw = (form[field.name] ?? '').trim()
    let value: unknown
    if (field.kind === 'check') value = raw === 'on'
    else if (field.kind === 'lines')
      value = raw
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter(Boolean)
    else if (field.kind === 'number') {
      // an empty number is no change; text that is no number is refused as the API refuses a wrong type
      if (raw === '') continue
      value = Number(raw)
      if (!Number.isFinite(value)) throw new ApiError(400, `${field.name}: must be a number`)
    } else if (field.kind === 'optional-text' || (field.kind === 'select' && raw === '')) value = raw === '' ? null : raw
    else value = raw
    if (JSON.stringify(value) !== JSON.stringify(current[field.name] ?? null)) body[field.name] = value
  }
  return body
}

/** What a failed post shows: the API's message, next to the field it names (or above the form), and what was typed. */
export interface Refused {
  form: string
  message: string
  values: Record<string, string>
}

/** The field an API message names: `excludedPaths.0: must start with /` names excludedPaths. */
const fieldOf = (message: string) => /^([A-Za-z]+)[.:]/.exec(message)?.[1]

/** The text a field shows: what was posted after a refusal, else the current value. */
function shown(field: FieldSpec, current: Values, refused?: Refused): string {
  if (refused) return refused.values[field.name] ?? ''
  const value = current[field.name]
  if (field.kind === 'check') return value ? 'on' : ''
  if (Array.isArray(value)) return value.join('\n')
  return value === null || value === undefined ? '' : String(value)
}

/**
 * A form field: its label and its input (an input, a select, a textarea, or a checkbox with its
 * label after it), a hint under it, and a refusal's wiring: the input described by the message,
 * marked invalid and focused, the message in an alert paragraph under it (`${id}-error` unless
 * `errorId` says). `attrs` are the input's other attributes (an `autofocus` of theirs wins).
 */
export function Field({
  id,
  name,
  label,
  refused,
  errorId = `${id}-error`,
  hint,
  kind = 'input',
  attrs = {},
  children,
}: {
  id: string
  name: string
  label: Child
  /** The message of a refusal that names this field. */
  refused?: string
  errorId?: string
  hint?: string
  kind?: 'input' | 'select' | 'textarea' | 'check'
  attrs?: Record<string, unknown> & { autofocus?: boolean }
  /** A select's options, a textarea's text. */
  children?: Child
}) {
  const hintId = hint ? `${id}-hint` : undefined
  const wiring = {
    id,
    name,
    ...attrs,
    'aria-describedby': [refused === undefined ? undefined : errorId, hintId].filter(Boolean).join(' ') || undefined,
    'aria-invalid': refused === undefined ? undefined : 'true',
    autofocus: attrs.autofocus ?? refused !== undefined,
  }
  const input =
    kind === 'select' ? (
      <select {...wiring}>{children}</select>
    ) : kind === 'textarea' ? (
      <textarea {...wiring}>{children}</textarea>
    ) : kind === 'check' ? (
      <input type="checkbox" {...wiring} />
    ) : (
      <input {...wiring} />
    )
  const labelled = <label for={id}>{label}</label>
  return (
    <div class={kind === 'check' ? 'field check' : 'field'}>
      {kind === 'check' ? input : labelled}
      {kind === 'check' ? labelled : input}
      {hint ? (
        <p class="hint muted" id={hintId}>
          {hint}
        </p>
      ) : null}
      {refused === undefined ? null : (
        <p class="error" id={errorId} role="alert">
          {refused}
        </p>
      )}
    </div>
  )
}

export function SettingsForm<A>({
  group,
  action,
  current,
  canWrite,
  refused,
  saved,
  submit = 'Save',
}: {
  group: FormGroup<A>
  action: string
  current: Values
  canWrite: boolean
  refused?: Refused
  saved?: boolean
  submit?: string
}) {
  const mine = refused?.form === group.id ? refused : undefined
  const errorField = mine ? fieldOf(mine.message) : undefined
  const onField = mine && group.fields.some((f) => f.name === errorField)
  return (
    <form method="post" action={action} class="card" id={group.id} aria-labelledby={`${group.id}-title`}>
      <h2 id={`${group.id}-title`}>{group.title}</h2>
      {group.intro ? <p class="muted">{group.intro}</p> : null}
      {saved ? (
        <p class="saved" role="status">
          Saved.
        </p>
      ) : null}
      {mine && !onField ? (
        <p class="error" role="alert">
          {mine.message}
        </p>
      ) : null}
      {[group.fields.filter((f) => f.kind === 'check'), group.fields.filter((f) => f.kind !== 'check')].map((list) =>
        list.length ? (
          <div class="fields">
            {list.map((field) => {
              const value = shown(field, current, mine)
              const drawn = {
                id: `${group.id}-${field.name}`,
                name: field.name,
                label: field.label,
                hint: field.hint,
                refused: onField && errorField === field.name ? mine!.message : undefined,
              }
              if (field.kind === 'check') return <Field {...drawn} kind="check" attrs={{ checked: value === 'on', disabled: !canWrite }} />
              if (field.kind === 'lines')
                return (
                  <Field {...drawn} kind="textarea" attrs={{ rows: 3, disabled: !canWrite }}>
                    {value}
                  </Field>
                )
              if (field.kind === 'select')
                return (
                  <Field {...drawn} kind="select" attrs={{ disabled: !canWrite }}>
                    {(field.options!.some(([option]) => option === value) || value === ''
                      ? field.options!
                      : [[String(value), String(value)] as const, ...field.options!]
                    ).map(([option, label]) => (
                      <option value={option} selected={option === value}>
                        {label}
                      </option>
                    ))}
                  </Field>
                )
              return <Field {...drawn} attrs={{ value, inputmode: field.kind === 'number' ? 'decimal' : undefined, disabled: !canWrite }} />
            })}
          </div>
        ) : null,
      )}
      {canWrite ? <button type="submit">{submit}</button> : null}
    </form>
  )
}

const TABS = [
  ['settings', 'Settings', ''],
  ['alerts', 'Alerts', '/alerts'],
  ['domain', 'Custom domain', '/domain'],
  ['integrations', 'Google and imports', '/integrations'],
] as const
type Tab = (typeof TABS)[number][0]

export function SiteNav({ site, orgId, orgName, current }: { site: Site; orgId: string; orgName: string; current: Tab }) {
  return (
    <div class="org-nav">
      <p class="crumb">
        <a href={`/app/orgs/${orgId}`}>← {orgName}</a>
      </p>
      <h1>{site.domain}</h1>
      <nav aria-label="Site">
        <a href={`/app/sites/${site.id}`}>Dashboard</a>
        <a href={`/app/sites/${site.id}/share`}>Sharing</a>
        {TABS.map(([tab, label, path]) => (
          <a href={`/app/sites/${site.id}/settings${path}`} aria-current={tab === current ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
    </div>
  )
}

export function ReadOnlyNotice({ canWrite }: { canWrite: boolean }) {
  return canWrite ? null : (
    <p class="notice">You are a member of this organization: you see these settings; owners and admins change them.</p>
  )
}

export const when = (iso: string | null | undefined) => (iso ? `${iso.slice(0, 16).replace('T', ' ')} UTC` : 'never')

/**
 * A post's answer: back to the page (303) once it worked; the page again with the API's message
 * when it was refused (a 4xx other than 403 and 404, which are the error page's to say).
 */
export async function refusedOr<T>(
  c: Context<WebEnv>,
  work: () => Promise<T>,
  render: (refused: Refused) => Promise<Response>,
  refused: Omit<Refused, 'message'>,
): Promise<{ done?: T; response?: Response }> {
  try {
    return { done: await work() }
  } catch (err) {
    const failure = asApiError(err, c.req.raw)
    if (failure.status >= 500 || failure.status === 403 || failure.status === 404) throw failure
    const response = await render({ ...refused, message: failure.message })
    return { response: new Response(response.body, { status: failure.status, headers: response.headers }) }
  }
}

/** The text fields of a posted form. */
export const postedText = async (c: Context<WebEnv>) =>
  Object.fromEntries(Object.entries(await c.req.parseBody()).filter((e): e is [string, string] => typeof e[1] === 'string'))

/** The member and the site of a settings page. */
export type Scope = ReturnType<typeof memberOf>

/** The member and the site of a page under /sites/{site}, for an owner or admin only (a plain member is refused, 403). */
export function siteAdmin(c: Context<WebEnv>, what: string): Scope {
  const scope = memberOf(c)
  requireRole(scope.member, ADMINS, what)
  return scope
}

/**
 * A settings form's post, for an owner or admin (`what` names the right, "change site settings"
 * unless said): its text fields read (none for a form of files, `text: false`), `work` done through
 * the API as the member; refused (refusedOr), the `page` again with the message and what was typed,
 * under the form's id; done, `done`'s answer, or a redirect (303) to the address it gives.
 */
export function settingsPost<T>(
  services: Services,
  post: {
    form: string
    what?: string
    text?: boolean
    page: (c: Context<WebEnv>, scope: Scope, refused: Refused) => Promise<Response>
    work: (input: { c: Context<WebEnv>; scope: Scope; form: Record<string, string>; api: Api }) => Promise<T>
    done: (c: Context<WebEnv>, scope: Scope, done: T) => string | Response | Promise<Response>
  },
) {
  return async (c: Context<WebEnv>) => {
    const scope = siteAdmin(c, post.what ?? 'change site settings')
    const form = post.text === false ? {} : await postedText(c)
    const api = apiFor(c, services, scope)
    const result = await refusedOr(
      c,
      () => post.work({ c, scope, form, api }),
      (refused) => post.page(c, scope, refused),
      { form: post.form, values: form },
    )
    if (result.response) return result.response
    const answer = await post.done(c, scope, result.done as T)
    return typeof answer === 'string' ? c.redirect(answer, 303) : answer
  }
}

/** Copies the text of the element a button names (data-copy) to the clipboard. */
export function CopyScript() {
  return (
    <script
      nonce={pageNonce()}
      dangerouslySetInnerHTML={{
        __html:
          "document.querySelectorAll('[data-copy]').forEach(function(b){b.addEventListener('click',function(){navigator.clipboard.writeText(document.getElementById(b.dataset.copy).textContent.trim()).then(function(){b.textContent='Copied'})})})",
      }}
    />
  )
}
