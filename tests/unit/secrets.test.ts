import { readFileSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { secretsEqual } from '../../lib/core/crypto'

const root = resolve(__dirname, '../..')
const sourceFiles = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  )

describe('secrets are compared in constant time', () => {
  it('secretsEqual tells equal secrets from every kind of different one', () => {
    expect(secretsEqual('s3cr3t-value', 's3cr3t-value')).toBe(true)
    expect(secretsEqual('', '')).toBe(true)
    for (const given of ['s3cr3t-valuE', 'x3cr3t-value', 's3cr3t-valu', 's3cr3t-value!', '', 's3cr3t-value\u0000']) {
      expect(secretsEqual(given, 's3cr3t-value'), JSON.stringify(given)).toBe(false)
    }
  })

  it('no source file compares a secret with === or !==', () => {
    const offending = [...sourceFiles('lib'), ...sourceFiles('functions')].flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (/[!=]==\s*\S*[sS]ecret\b|[sS]ecret\)?\s*[!=]==/.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    )
    expect(offending).toEqual([])
  })
})
