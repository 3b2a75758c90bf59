import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Command } from 'commander'
import { dataDir, findRunningServer } from '../lib/runtime/node'

/** Runs `wrangler dev` offline against the embedded stores of a running `npm start`. */
const program = new Command('dev-worker')
  .description(
    'Write .dev.vars pointing at the local ClickHouse-HTTP and Upstash-REST endpoints of `npm start`, then run wrangler dev offline.',
  )
  .option('--port <port>', 'port for wrangler dev', '8790')
  .action(async (opts: { port: string }) => {
    const dir = dataDir(process.env)
    const running = await findRunningServer(dir)
    if (!running?.clickhouse || !running.redis) {
      process.stderr.write(
        'No server owns the embedded stores in DATA_DIR. Start one first with `npm start` (without CLICKHOUSE_URL or REDIS_URL).\n',
      )
      process.exit(1)
    }
    const token = readFileSync(join(dir, 'local-token'), 'utf8').trim()
    const vars = {
      CLICKHOUSE_URL: running.url,
      CLICKHOUSE_PASSWORD: token,
      UPSTASH_REDIS_REST_URL: `${running.url}/redis`,
      UPSTASH_REDIS_REST_TOKEN: token,
      OUTBOUND_ALLOW_PRIVATE: '1',
    }
    writeFileSync(
      '.dev.vars',
      `${Object.entries(vars)
        .map(([k, v]) => `${k}=${v}`)
        .join('\n')}\n`,
      { mode: 0o600 },
    )
    const child = spawn(process.execPath, ['node_modules/wrangler/bin/wrangler.js', 'dev', '--port', opts.port], {
      stdio: 'inherit',
      env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true', CLOUDFLARE_CF_FETCH_ENABLED: 'false' },
    })
    child.on('exit', (code) => process.exit(code ?? 0))
  })
await program.parseAsync(process.argv)
