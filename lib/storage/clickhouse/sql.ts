/**
 * SQL as fragments that carry their own bound values. A value interpolated into `sql` becomes a
 * `{pN:Type}` parameter when the whole statement is rendered, so the text never holds user input
 * and fragments compose without sharing a parameter bag. Numbering happens once, at render, in
 * order of appearance: the same statement always renders to the same text and parameters.
 */

/** The ClickHouse types reports bind. */
export type ParamType =
  | 'UUID'
  | 'String'
  | 'Date'
  | 'DateTime64(3)'
  | 'UInt16'
  | 'UInt32'
  | 'UInt64'
  | 'Array(String)'
  | 'Array(Date)'
  | 'Array(UUID)'

/** One value to bind, with its ClickHouse type. */
export class Bound {
  constructor(
    readonly type: ParamType,
    readonly value: unknown,
  ) {}
}

/** A piece of SQL: text and the values and fragments between its pieces. */
export class Fragment {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly (Fragment | Bound)[],
  ) {}
}

export const bind = (type: ParamType, value: unknown) => new Bound(type, value)

export function sql(strings: TemplateStringsArray, ...values: (Fragment | Bound)[]): Fragment {
  return new Fragment(strings, values)
}

/** Text from the code itself (an allow-listed identifier or expression), never from input. */
export const raw = (text: string) => new Fragment([text], [])

export const empty = raw('')

/** The fragments separated by `separator` (plain text such as ' AND '). */
export function join(fragments: readonly Fragment[], separator: string): Fragment {
  if (!fragments.length) return empty
  return new Fragment(['', ...fragments.slice(1).map(() => separator), ''], fragments)
}

export interface Compiled {
  sql: string
  params: Record<string, unknown>
}

/**
 * The statement's text and parameters. A value bound more than once (the site, the window's
 * bounds, one array) is one parameter.
 */
export function render(fragment: Fragment): Compiled {
  const params: Record<string, unknown> = {}
  // scalars by value, arrays by identity; each under its type
  const names = new Map<unknown, Map<ParamType, string>>()
  let count = 0
  const name = (bound: Bound) => {
    const key = bound.value !== null && typeof bound.value === 'object' ? bound.value : `${typeof bound.value}|${String(bound.value)}`
    let byType = names.get(key)
    if (!byType) names.set(key, (byType = new Map()))
    let known = byType.get(bound.type)
    if (known === undefined) {
      known = `p${count++}`
      params[known] = bound.value
      byType.set(bound.type, known)
    }
    return known
  }
  const write = (f: Fragment): string => {
    let text = f.strings[0]
    f.values.forEach((v, i) => {
      text += (v instanceof Fragment ? write(v) : `{${name(v)}:${v.type}}`) + f.strings[i + 1]
    })
    return text
  }
  return { sql: write(fragment), params }
}
