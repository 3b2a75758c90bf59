import { execFile } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, demoKeys, startServer } from './server-process'

/**
 * The protocol's own conformance suite, in server mode, against a running server: its stable
 * release for 2025-11-25 and its prerelease for 2026-07-28 (docs/mcp.md lists the scenarios left
 * out and why). Each scenario's checks must pass, but for the ones named here: checks that need a
 * test fixture of the reference server (its diagnostic tools, prompts, resources) to be tested.
 */
const SUITES = {
  '2025-11-25': {
    cli: 'node_modules/@modelcontextprotocol/conformance/dist/index.js',
    scenarios: {
      'server-initialize': [],
      ping: [],
      'tools-list': [],
      'dns-rebinding-protection': [],
    },
  },
  '2026-07-28': {
    cli: 'node_modules/mcp-conformance-next/dist/index.js',
    scenarios: {
      'server-stateless': [
        // the reference server's diagnostic tools: one that needs a client capability, one that streams an elicitation, one that logs
        'FAILURE sep-2575-server-rejects-undeclared-capability',
        'FAILURE sep-2575-missing-capability-http-400',
        'FAILURE sep-2575-http-server-no-independent-requests-on-stream',
        'FAILURE sep-2575-server-no-log-without-loglevel',
        // list-changed notifications: the tool list never changes while the server runs
        'SKIPPED sep-2575-server-sends-prompts-list-changed-on-subscription',
        'SKIPPED sep-2575-server-sends-tools-list-changed-on-subscription',
      ],
      'tools-list': [],
      caching: [
        // no prompts and no resources: only tools
        'FAILURE sep-2549-prompts-list-caching-hints',
        'FAILURE sep-2549-resources-list-caching-hints',
        'FAILURE sep-2549-resources-templates-list-caching-hints',
        'SKIPPED sep-2549-resources-read-caching-hints',
      ],
      'sep-2164-resource-not-found': [
        // no resources: resources/read is a method this server does not have (-32601), so no -32602 naming the URI
        'WARNING sep-2164-error-code',
        'WARNING sep-2164-data-uri',
      ],
      'input-required-result-unsupported-methods': [],
      'dns-rebinding-protection': [],
      'http-header-validation': [],
    },
  },
} as const satisfies Record<string, { cli: string; scenarios: Record<string, readonly string[]> }>

const run = promisify(execFile)

describe('the MCP conformance suite against a running server', () => {
  let server: RunningServer
  let proxy: http.Server
  let url = ''

  beforeAll(async () => {
    // the suite checks the protocol, not numbers: the demo's keys without its traffic
    server = await startServer({
      DATA_DIR: tempDir('mcp-conformance'),
      REDIS_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      CLICKHOUSE_URL: '',
      SKIP_DEMO_TRAFFIC: '1',
    })
    const { writeKey } = demoKeys(server.output())
    // the suite connects without credentials: in front of the server, this adds a write key and passes the rest as it came
    const upstream = new URL(server.url)
    proxy = http.createServer((req, res) => {
      const forwarded = http.request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, authorization: `Bearer ${writeKey}` },
        },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers)
          answer.pipe(res)
        },
      )
      forwarded.on('error', (err) => res.destroy(err))
      req.pipe(forwarded)
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/api/mcp`
  }, 120_000)
  afterAll(async () => {
    await new Promise((resolve) => proxy?.close(resolve))
    await server?.stop()
  })

  for (const [version, suite] of Object.entries(SUITES))
    for (const [scenario, notApplicable] of Object.entries(suite.scenarios))
      it(`${version}: ${scenario}`, async () => {
        const results = tempDir('conformance')
        await run(
          process.execPath,
          [
            '--import',
            './tests/e2e/conformance-node20.mjs',
            suite.cli,
            'server',
            '--url',
            url,
            '--scenario',
            scenario,
            '--spec-version',
            version,
            '--output-dir',
            results,
          ],
          { env: { ...process.env, NO_COLOR: '1' } },
        ).catch((failed: { stdout: string }) => failed)
        const [dir] = readdirSync(results)
        const checks = JSON.parse(readFileSync(join(results, dir, 'checks.json'), 'utf8')) as { id: string; status: string }[]
        expect(checks.filter((c) => c.status === 'SUCCESS').length).toBeGreaterThan(0)
        expect(checks.filter((c) => !['SUCCESS', 'INFO'].includes(c.status)).map((c) => `${c.status} ${c.id}`)).toEqual(notApplicable)
      }, 60_000)
})
