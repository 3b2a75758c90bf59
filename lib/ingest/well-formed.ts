/*
 * Text that every store takes. JSON can carry a lone UTF-16 surrogate (`"\ud800"`): JavaScript
 * keeps it, and ClickHouse refuses the whole insert that holds it ("missing second part of
 * surrogate pair"). Control characters are stored as they are but break the lines, logs and
 * exports they are shown in. Both are repaired where a hit comes in, before it is acknowledged:
 * a lone surrogate and a control character (but tab, line feed and carriage return) each become
 * U+FFFD, the replacement character, so the hit is kept and the repair can be seen.
 */

declare global {
  // ES2024, in every runtime this service supports (Node 20, workerd); the project's lib is ES2023
  interface String {
    isWellFormed(): boolean
    toWellFormed(): string
  }
}

// C0 but tab, LF and CR; DEL; C1 (written as escapes in a string: the linter refuses them in a literal)
const CONTROL_CLASS = '[\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]'
const CONTROL = new RegExp(CONTROL_CLASS)
const CONTROLS = new RegExp(CONTROL_CLASS, 'g')

/** The text with each lone surrogate and control character (but tab, LF, CR) replaced by U+FFFD. */
export function wellFormedText(text: string): string {
  const paired = text.isWellFormed() ? text : text.toWellFormed()
  return CONTROL.test(paired) ? paired.replace(CONTROLS, '\uFFFD') : paired
}

// one test finds both in the common case, text with neither: a surrogate found may be half of a pair
const SUSPECT = new RegExp(`${CONTROL_CLASS.slice(0, -1)}\\uD800-\\uDFFF]`)

/** Whether the text needs no repair. */
export const isWellFormedText = (text: string) => !SUSPECT.test(text) || (text.isWellFormed() && !CONTROL.test(text))

/** Deeper than this, a payload is not walked: no hit or row nests so deep, and its checks refuse it. */
const MAX_DEPTH = 8

/**
 * Repairs every string of a parsed JSON value in place (object keys included), down to
 * MAX_DEPTH levels; returns the value, or the repaired string for a string. Cheap when nothing
 * needs repair: one check a string.
 */
export function wellFormedInput<T>(value: T, depth = 0): T {
  if (typeof value === 'string') return (isWellFormedText(value) ? value : wellFormedText(value)) as T
  if (typeof value !== 'object' || value === null || depth >= MAX_DEPTH) return value
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i]
      if (typeof item === 'string' ? !isWellFormedText(item) : typeof item === 'object') value[i] = wellFormedInput(item, depth + 1)
    }
    return value
  }
  const record = value as Record<string, unknown>
  for (const key in record) {
    const item = record[key]
    const repaired = typeof item === 'string' ? (isWellFormedText(item) ? item : wellFormedText(item)) : wellFormedInput(item, depth + 1)
    if (isWellFormedText(key)) {
      if (repaired !== item) record[key] = repaired
    } else {
      delete record[key]
      record[wellFormedText(key)] = repaired
    }
  }
  return value
}

/** The first `max` code units of the text, one fewer where the cut would split a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text
  const last = text.charCodeAt(max - 1)
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max)
}
