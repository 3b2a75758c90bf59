import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'

export interface RunningServer {
  url: string
  process: ChildProcess
  output: () => string
  /** What it wrote on stdout alone (the first-start banner with its keys) and on stderr alone (the log). */
  stdout: () => string
  stderr: () => string
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts `functions/node.ts` as `npm start` does, on a free port, and waits until it listens.
 * `stdout` sends its standard output elsewhere: a file descriptor it writes to (`> file`), or
 * `closed`, a pipe whose reader is gone before it writes (its writes fail with EPIPE).
 */
export async function startServer(
  env: Record<string, string>,
  options: { stdout?: number | 'closed'; startTimeoutMs?: number } = {},
): Promise<RunningServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
    // no live demo visitors unless a test asks: they would move the numbers it reads
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DEMO_LIVE_TRAFFIC: '0', ...env },
    stdio: ['ignore', typeof options.stdout === 'number' ? options.stdout : 'pipe', 'pipe'],
  })
  let output = ''
  let stdout = ''
  let stderr = ''
  if (options.stdout === 'closed') child.stdout!.destroy()
  else child.stdout?.on('data', (d) => ((output += d), (stdout += d)))
  child.stderr!.on('data', (d) => ((output += d), (stderr += d)))
  const url = await new Promise<string>((resolve, reject) => {
    // a first start makes the demo (two months of hits): on a busy machine that takes most of a minute
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), options.startTimeoutMs ?? 110_000)
    const check = () => {
      // the listening line comes last, after the first-start banner
      const match = /analytics API on (http:\/\/\S+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        // the banner goes to stdout before this line goes to stderr: let the other pipe be read too
        setTimeout(() => resolve(match[1]), 200)
      }
    }
    child.stderr!.on('data', check)
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
  })
  return {
    url,
    process: child,
    output: () => output,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode)
        child.once('exit', (code) => resolve(code))
        child.kill(signal)
      }),
  }
}

/** The variables of the first-start banner's `export` line. */
export function demoKeys(output: string) {
  const line = /^ {2}export (.+)$/m.exec(output)
  if (!line) throw new Error(`no export line in:\n${output}`)
  const vars = Object.fromEntries(line[1].split(' ').map((pair) => pair.split('=') as [string, string]))
  return { readKey: vars.KEY, writeKey: vars.WRITE_KEY, site: vars.SITE, org: vars.ORG }
}

const run = promisify(execFile)

/** Runs a CLI script the way `npm run -s <name> -- ...` does; returns parsed stdout JSON. */
export async function cli(script: 'admin' | 'migrate' | 'import' | 'demo-traffic', args: string[], env: Record<string, string>) {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', `scripts/${script}.ts`, ...args], { env: { ...process.env, ...env } })
  return JSON.parse(stdout)
}
