import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { createServer } from 'node:net'

/** `redis-server` when installed: the outage tests pause and kill a Redis of their own, never the run's shared one. */
export const REDIS_SERVER = spawnSync('redis-server', ['--version']).status === 0 ? 'redis-server' : null
if (process.env.CI && !REDIS_SERVER) throw new Error('CI is set but redis-server is not installed: the store outage tests would be skipped')

export const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

export interface OwnRedis {
  url: string
  process: ChildProcess
  /** SIGSTOP: it keeps its connections and answers nothing, as a stalled server does. */
  pause(): void
  resume(): void
  /** SIGKILL, resolved once it is gone: connections are refused from then on. */
  kill(): Promise<void>
}

/** A `redis-server` of the caller's own on a free port, without persistence, answering once started. */
export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort()
  const child = spawn(REDIS_SERVER!, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  })
  for (let i = 0; i < 50; i++) {
    if (
      spawnSync('redis-cli', ['-p', String(port), 'ping'])
        .stdout?.toString()
        .includes('PONG')
    )
      break
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    process: child,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    kill: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGKILL')
      }),
  }
}
