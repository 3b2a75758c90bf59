import { readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { GENERATED, buildTracker } from '../../scripts/build-tracker'

describe('the tracker bundle', () => {
  it('is built from the current sources (run npm run build:tracker after changing them)', async () => {
    const { text } = await buildTracker()
    expect(readFileSync(GENERATED, 'utf8')).toBe(text)
  })

  it('is at most 2.5 KB gzipped, and the vitals load separately', async () => {
    const { files } = await buildTracker()
    expect(gzipSync(files.script.code).length).toBeLessThanOrEqual(2560)
    expect(files.script.code).toContain(files.vitals.path)
    expect(files.script.code).toContain(files.vitalsAttribution.path)
    expect(files.script.code).not.toMatch(/cookie|localStorage|sessionStorage/)
  })

  it("has a build for Plausible's tag that script.js loads for data-domain, at most 2 KB gzipped and without storage", async () => {
    const { files } = await buildTracker()
    expect(files.script.code).toContain(files.plausible.path)
    expect(gzipSync(files.plausible.code).length).toBeLessThanOrEqual(2048)
    expect(files.plausible.code).not.toMatch(/cookie|localStorage|sessionStorage/)
  })
})
