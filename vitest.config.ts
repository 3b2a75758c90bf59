import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    globalSetup: ['tests/global-setup.ts'],
    // chdb allows one engine per process: every test file runs in its own process
    pool: 'forks',
    testTimeout: 60_000,
    // servers started by the tests log errors only; a test that reads request lines asks for them
    env: { LOG_LEVEL: 'error' },
    hookTimeout: 120_000,
  },
})
