import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * The reads that were slow on the demo, timed end to end: `npm start` on a fresh data folder
 * (which creates the demo), then, once it prints the line it is up (after the demo's traffic, the
 * rollup of its days and its crawls), each path requested RUNS times after one warm-up; the median
 * and the slowest are printed in milliseconds, with the machine's load average (1, 5 and 15 minutes)
 * when the path's runs ended: on a shared machine it says how noisy they were.
 *
 *   npx tsx scripts/bench-slow-reads.ts [RUNS]
 */
const RUNS = Number(process.argv[2] ?? 15)
const PATHS = [
  '/api/v1/spikes?site_id=$SITE',
  '/api/v1/spikes?site_id=$SITE&interval=day&range=90d',
  '/api/v1/export?site_id=$SITE',
  '/api/v1/export?site_id=$SITE&range=7d',
]

const dir = await mkdtemp(join(tmpdir(), 'bench-slow-reads-'))
const server = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
  env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, DEMO: '1', DEMO_LIVE_TRAFFIC: '0' },
  stdio: ['ignore', 'pipe', 'pipe'],
})
let output = ''
server.stdout.on('data', (d) => (output += d))
server.stderr.on('data', (d) => (output += d))
try {
  const url = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = /analytics API on (http:\/\/\S+)/.exec(output)
      if (match) resolve(match[1])
    }
    server.stderr.on('data', check)
    server.on('exit', (code) => reject(new Error(`the server exited with ${code}:\n${output}`)))
  })
  const vars = Object.fromEntries(
    (/^ {2}export (.+)$/m.exec(output)?.[1] ?? '').split(' ').map((pair) => pair.split('=') as [string, string]),
  )
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  for (const template of PATHS) {
    const path = template.replace('$SITE', vars.SITE)
    const times: number[] = []
    for (let i = 0; i <= RUNS; i++) {
      const started = performance.now()
      const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${vars.KEY}` } })
      const body = await res.text()
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body}`)
      if (i > 0) times.push(performance.now() - started)
    }
    process.stdout.write(
      `${JSON.stringify({ path: template, runs: RUNS, medianMs: Math.round(median(times)), maxMs: Math.round(Math.max(...times)), loadAverage: loadavg().map((x) => +x.toFixed(2)) })}\n`,
    )
  }
} finally {
  server.kill('SIGTERM')
  await new Promise((resolve) => server.once('exit', resolve))
  await rm(dir, { recursive: true, force: true })
}
