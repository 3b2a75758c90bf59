import { existsSync } from 'node:fs'
import { chromium } from 'playwright-core'

/** Debian's Chromium, when installed (the browser tests skip without it). */
export const CHROMIUM = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find((p) => existsSync(p))

/** Headless Chromium with the flags this closed network needs. */
export const launchChromium = (extraArgs: string[] = []) =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: [...extraArgs, '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  })
