import type { Context } from 'hono'
import { ApiError } from '../../../lib/core/errors'
import type { Site } from '../../../lib/sites/sites'
import { asApiError } from '../../invoke'
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
export interface Field {
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
  fields: Field[]
  /** The current values, from the API's read `A`. */
  values: (answer: A) => Values
}

export const check = (name: string, label: string, hint?: string): Field => ({ name, label, kind: 'check', hint })
export const lines = (name: string, label: string, hint: string): Field => ({ name, label, kind: 'lines', hint })

/** The posted text of a form as the API's values; only the fields that differ from `current` (PATCH sends what changes). */
export function changedFields(fields: Field[], form: Record<string, string>, current: Values): Values {
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
function shown(field: Field, current: Values, refused?: Refused): string {
  if (refused) return refused.values[field.name] ?? ''
  const value = current[field.name]
  if (field.kind === 'check') return value ? 'on' : ''
  if (Array.isArray(value)) return value.join('\n')
  return value === null || value === undefined ? '' : String(value)
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
  const errorId = (name: string) => `${group.id}-${name}-error`
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
              const id = `${group.id}-${field.name}`
              const value = shown(field, current, mine)
              const invalid = onField && errorField === field.name
              const hintId = field.hint ? `${id}-hint` : undefined
              const describedBy = [invalid ? errorId(field.name) : undefined, hintId].filter(Boolean).join(' ') || undefined
              const error = invalid ? (
                <p class="error" id={errorId(field.name)} role="alert">
                  {mine!.message}
                </p>
              ) : null
              const hint = field.hint ? (
                <p class="hint muted" id={hintId}>
                  {field.hint}
                </p>
              ) : null
              if (field.kind === 'check')
                return (
                  <div class="field check">
                    <input
                      type="checkbox"
                      id={id}
                      name={field.name}
                      checked={value === 'on'}
                      disabled={!canWrite}
                      aria-describedby={describedBy}
                      aria-invalid={invalid ? 'true' : undefined}
                      autofocus={invalid}
                    />
                    <label for={id}>{field.label}</label>
                    {hint}
                    {error}
                  </div>
                )
              return (
                <div class="field">
                  <label for={id}>{field.label}</label>
                  {field.kind === 'lines' ? (
                    <textarea
                      id={id}
                      name={field.name}
                      rows={3}
                      disabled={!canWrite}
                      autofocus={invalid}
                      aria-describedby={describedBy}
                      aria-invalid={invalid ? 'true' : undefined}
                    >
                      {value}
                    </textarea>
                  ) : field.kind === 'select' ? (
                    <select
                      id={id}
                      name={field.name}
                      disabled={!canWrite}
                      autofocus={invalid}
                      aria-describedby={describedBy}
                      aria-invalid={invalid ? 'true' : undefined}
                    >
                      {(field.options!.some(([option]) => option === value) || value === ''
                        ? field.options!
                        : [[String(value), String(value)] as const, ...field.options!]
                      ).map(([option, label]) => (
                        <option value={option} selected={option === value}>
                          {label}
                        </option>
                      ))}
                    </select>
                  ) : (
                    <input
                      id={id}
                      name={field.name}
                      value={value}
                      inputmode={field.kind === 'number' ? 'decimal' : undefined}
                      disabled={!canWrite}
                      autofocus={invalid}
                      aria-describedby={describedBy}
                      aria-invalid={invalid ? 'true' : undefined}
                    />
                  )}
                  {hint}
                  {error}
                </div>
              )
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
