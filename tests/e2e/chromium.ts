import { existsSync } from 'node:fs'
import { chromium } from 'playwright-core'

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
