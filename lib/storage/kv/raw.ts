import { StoreUnavailableError } from '../errors'
import type { Requester, UpstashRequest, UpstashResponse } from '@upstash/redis'

export type RedisCommand = (string | number)[]
export type CommandResult = { result: unknown } | { error: string }

/**
 * A Redis that runs raw commands: the embedded engine, or a TCP connection.
 * It is what the Upstash REST protocol carries, so one adapter turns it into an
 * `@upstash/redis` requester and another serves it over HTTP to `wrangler dev` and the CLIs.
 */
export interface RawRedis {
  exec(command: RedisCommand): Promise<unknown>
  pipeline(commands: RedisCommand[]): Promise<CommandResult[]>
  /** Runs the commands atomically (MULTI/EXEC). */
  transaction(commands: RedisCommand[]): Promise<CommandResult[]>
  close(): Promise<void>
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err))

/** Upstash REST semantics: path [] is one command, ['pipeline'] a list, ['multi-exec'] a transaction. */
export async function runUpstashRequest(raw: RawRedis, path: string[] | undefined, body: unknown): Promise<unknown> {
  const route = path?.[0] ?? ''
  if (route === 'pipeline' || route === 'multi-exec') {
    if (!Array.isArray(body) || !body.every(Array.isArray)) return { error: 'ERR body must be an array of commands' }
    return route === 'pipeline' ? raw.pipeline(body as RedisCommand[]) : raw.transaction(body as RedisCommand[])
  }
  if (!Array.isArray(body)) return { error: 'ERR body must be a command array' }
  try {
    return { result: await raw.exec(body as RedisCommand) }
  } catch (err) {
    // an outage stays one: it is answered 503, not read as the store's reply to the command
    if (err instanceof StoreUnavailableError) throw err
    return { error: errorText(err) }
  }
}

/** An in-process requester for `new Redis(requester)`: no HTTP, no encoding. */
export function rawRequester(raw: RawRedis): Requester {
  return {
    request: async <T>(req: UpstashRequest) => (await runUpstashRequest(raw, req.path, req.body)) as UpstashResponse<T>,
  }
}

function base64(value: unknown): unknown {
  if (typeof value === 'string') return value === 'OK' ? value : Buffer.from(value, 'utf8').toString('base64')
  if (Array.isArray(value)) return value.map(base64)
  return value
}

/** Applies the `Upstash-Encoding: base64` response encoding the REST client asks for by default. */
export function encodeUpstashResponse(response: unknown, encoding: string | undefined): unknown {
  if (encoding !== 'base64') return response
  const encodeOne = (r: CommandResult) => ('result' in r ? { result: base64(r.result) } : r)
  return Array.isArray(response) ? response.map(encodeOne) : encodeOne(response as CommandResult)
}

export const isUpstashError = (response: unknown) =>
  !Array.isArray(response) && typeof response === 'object' && response !== null && 'error' in response
