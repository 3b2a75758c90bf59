import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { configurationPage } from '../../lib/runtime/env-docs'

it('docs/configuration.md is the page the environment schemas make (npm run docs:config rewrites it)', () => {
  expect(readFileSync('docs/configuration.md', 'utf8')).toBe(configurationPage())
})
