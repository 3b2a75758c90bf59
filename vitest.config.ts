import { defineConfig } from 'vitest/config'

/**
 * Three tiers, each a project with a script of its own (`npm run test:unit`, `test:api`,
 * `test:e2e`); `npm test` runs them all. Every test file runs in a process of its own (chdb allows
 * one engine per process), except in `unit`: its files share their worker's process and modules,
 * so each worker imports the code once, and its few engine tests share that worker's one engine.
 */
export default defineConfig({
  test: {
    globalSetup: ['tests/global-setup.ts'],
    pool: 'forks',
    // three files at a time, also on two cores: a file waits on its engine, servers and Chromium for
    // much of its time, and one process at a time left the machine half idle (the api tier ran
    // 162 s on one, 110 s on three, for the same twelve files)
    maxWorkers: 3,
    testTimeout: 60_000,
    // servers started by the tests log errors only; a test that reads request lines asks for them. A
    // read may run for a minute, not 10 s: a test's reads are small, but a loaded machine can stall
    // one; the bound itself is tested with limits of its own (tests/api/read-bounds.test.ts)
    env: { LOG_LEVEL: 'error', QUERY_TIME_LIMIT_MS: '60000' },
    hookTimeout: 120_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], isolate: false } },
      { extends: true, test: { name: 'api', include: ['tests/api/**/*.test.ts'] } },
      { extends: true, test: { name: 'e2e', include: ['tests/e2e/**/*.test.ts'] } },
    ],
  },
})
