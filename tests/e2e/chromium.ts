import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Page, chromium } from 'playwright-core'
import { expect } from 'vitest'

/** Debian's Chromium, when installed (the browser tests skip without it). */
export const CHROMIUM = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find((p) => existsSync(p))
// CI runs every test: the browser tests must not skip there
if (process.env.CI && !CHROMIUM) throw new Error('CI is set but Chromium is not installed: the browser tests would be skipped')

/** Headless Chromium with the flags this closed network needs. */
export const launchChromium = (extraArgs: string[] = []) =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: [
      ...extraArgs,
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  })

const AXE = readFileSync(join(process.cwd(), 'node_modules/axe-core/axe.min.js'), 'utf8')

/** axe-core in the page: the serious and critical violations, by rule and the elements they name. */
async function accessibilityViolations(page: Page) {
  // evaluated, not added as a <script>: the pages' Content-Security-Policy refuses a script without their nonce
  await page.evaluate(AXE)
  const result = await page.evaluate(async () => (window as any).axe.run(document, { resultTypes: ['violations'] }))
  return (result.violations as any[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`)
}

/**
 * A page check for one test file: axe-core finds no serious or critical violation, and screenshots at
 * desktop and phone widths are kept under test-artifacts/<folder> (out of git), to look at.
 */
export function pageChecker(folder: string) {
  const artifacts = join(process.cwd(), 'test-artifacts', folder)
  mkdirSync(artifacts, { recursive: true })
  return async (page: Page, name: string) => {
    expect(await accessibilityViolations(page), name).toEqual([])
    for (const [width, label] of [
      [1280, 'desktop'],
      [390, 'phone'],
    ] as const) {
      await page.setViewportSize({ width, height: width === 1280 ? 800 : 844 })
      await page.screenshot({ path: join(artifacts, `${name}-${label}.png`), fullPage: true })
    }
    await page.setViewportSize({ width: 1280, height: 800 })
  }
}
