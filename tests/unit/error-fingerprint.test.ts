import { describe, expect, it } from 'vitest'
import { errorGroupKey, normalizedErrorMessage } from '../../lib/ingest/rows'

const chrome = (fn: string, line: number, column: number) =>
  `TypeError: x\n    at ${fn} (https://shop.test/assets/app.js:${line}:${column})\n    at main (https://shop.test/assets/app.js:1:10)`

describe('error groups', () => {
  it('masks URLs, ids and numbers in messages', () => {
    expect(normalizedErrorMessage('Failed to load https://cdn.test/img/42.png?v=7 after 3 tries')).toBe(
      'Failed to load <url> after <n> tries',
    )
    expect(normalizedErrorMessage('Order 3f2c1a9e-77b0-4c1d-9a0e-5b7d2c1f0a11 not found')).toBe('Order <id> not found')
    expect(normalizedErrorMessage('Session a8f93kd02lq expired')).toBe('Session <id> expired')
    expect(normalizedErrorMessage("Cannot read properties of undefined (reading 'price')")).toBe(
      "Cannot read properties of undefined (reading 'price')",
    )
  })

  it('puts occurrences that differ in numbers, ids, URLs, lines and columns in one group', () => {
    const a = errorGroupKey('error', {
      name: 'TypeError',
      message: 'Item 12 missing from https://shop.test/cart/991',
      stack: chrome('render', 1, 4031),
    })
    const b = errorGroupKey('error', {
      name: 'TypeError',
      message: 'Item 7 missing from https://shop.test/cart/5',
      stack: chrome('render', 3, 17),
    })
    expect(a).toBe(b)
    const firefox = (line: number) =>
      errorGroupKey('error', {
        name: 'Error',
        message: `code ${line}`,
        stack: `render@https://shop.test/app.js:${line}:9\nmain@https://shop.test/app.js:1:1`,
      })
    expect(firefox(10)).toBe(firefox(2000))
    expect(firefox(10)).toContain('render@https://shop.test/app.js')
  })

  it('keeps apart different names, messages, top frames and kinds', () => {
    const base = { name: 'TypeError', message: 'Item 12 missing', stack: chrome('render', 1, 1) }
    const key = errorGroupKey('error', base)
    expect(errorGroupKey('error', { ...base, name: 'RangeError' })).not.toBe(key)
    expect(errorGroupKey('error', { ...base, message: 'Item 12 gone' })).not.toBe(key)
    expect(errorGroupKey('error', { ...base, stack: chrome('checkout', 1, 1) })).not.toBe(key)
    expect(errorGroupKey('custom', base)).not.toBe(key)
  })

  it('falls back to the script an error came from when there is no stack', () => {
    expect(errorGroupKey('error', { message: 'Script error.', source: 'https://shop.test/a.js' })).toBe(
      'error|Error|Script error.|https://shop.test/a.js',
    )
  })
})
