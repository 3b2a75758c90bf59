import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    globalSetup: ['tests/global-setup.ts'],
    // chdb allows one engine per process: every test file runs in its own process
    pool: 'forks',
    testTimeout: 60_000,
    // servers started by the tests log errors only; a test that reads request lines asks for them. A
    // read may run for a minute, not 10 s: a test's reads are small, but a loaded machine can stall
    // one; the bound itself is tested with limits of its own (tests/api/read-bounds.test.ts)
    env: { LOG_LEVEL: 'error', QUERY_TIME_LIMIT_MS: '60000' },
    hookTimeout: 120_000,
  },
})
