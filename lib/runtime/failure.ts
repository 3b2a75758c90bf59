import type { Command } from 'commander'
import { ApiError } from '../core/errors'
import { StoreUnavailableError } from '../storage/errors'
import { UserError } from '../core/errors'

/**
 * What the server and the CLIs print when they cannot go on: a failure the user can fix is one
 * sentence without a stack; anything else is a bug, printed whole.
 */
export function sentenceFor(err: unknown): string | null {
  if (err instanceof UserError || err instanceof ApiError) return err.message
  // an outage met at start: the network failure behind it says what to check
  if (err instanceof StoreUnavailableError) return sentenceFor(err.cause) ?? err.message
  const e = err as NodeJS.ErrnoException & { port?: number; address?: string; code?: string; type?: string; hostname?: string }
  // ClickHouse's own refusals (a ClickHouseError of @clickhouse/client carries the server's type)
  if (e?.type === 'AUTHENTICATION_FAILED' || e?.type === 'REQUIRED_PASSWORD')
    return 'ClickHouse refused the user and password: check CLICKHOUSE_USER and CLICKHOUSE_PASSWORD'
  if (e?.type === 'UNKNOWN_DATABASE') return 'ClickHouse has no such database: check CLICKHOUSE_DATABASE'
  switch (e?.code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the host ${e.hostname} is not known: check the host of REDIS_URL or CLICKHOUSE_URL`
    case 'commander.invalidArgument':
      return e.message.replace(/^error: /, '')
    case 'ENOENT':
      return `cannot read ${e.path}: no such file or folder`
    case 'EACCES':
      return e.syscall === 'listen'
        ? `not allowed to listen on port ${e.port}: pick a port above 1023 with PORT`
        : `cannot open ${e.path}: permission denied`
    case 'EISDIR':
      return `${e.path} is a folder, not a file`
    case 'EADDRINUSE':
      return `port ${e.port} is already in use on ${e.address}: stop what listens there, or set PORT (and LOCAL_PORT) to free ports`
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${e.address}: set HOST to an address of this machine`
    case 'ECONNREFUSED':
      return `nothing answers at ${e.address}:${e.port}: is the server behind REDIS_URL or CLICKHOUSE_URL running?`
  }
  return null
}

/** Prints the failure (one line when it is the user's to fix) and exits non-zero. */
export function exitWithFailure(err: unknown): never {
  const sentence = sentenceFor(err)
  process.stderr.write(sentence ? `error: ${sentence}\n` : `${(err as Error)?.stack ?? String(err)}\n`)
  process.exit(1)
}

/** Runs a CLI: whatever stops it ends the process with a sentence and a non-zero exit. */
export async function runCli(program: Command) {
  try {
    await program.parseAsync(process.argv)
  } catch (err) {
    exitWithFailure(err)
  }
}
