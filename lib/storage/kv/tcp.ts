import { createHash } from 'node:crypto'
import { Redis as IoRedis } from 'ioredis'
import { StoreUnavailableError } from '../errors'
import type { CommandResult, RawRedis, RedisCommand } from './raw'

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex')

/**
 * Redis over TCP. Scripts sent by `@upstash/ratelimit` start with `#!lua flags=...`,
 * which Redis 7.0 rejects, so the line is stripped; EVALSHA of the original script's
 * hash is mapped to the stripped script's hash so cached scripts stay one round trip.
 */
export class TcpRedis implements RawRedis {
  private readonly client: IoRedis
  private readonly strippedSha = new Map<string, string>()

  /** `timeoutMs`: how long one call may wait for Redis before it is an outage (KV_TIMEOUT_MS). */
  constructor(url: string, timeoutMs = 2000) {
    this.client = new IoRedis(url, {
      maxRetriesPerRequest: 2,
      enableAutoPipelining: false,
      lazyConnect: false,
      // a stalled or unreachable server fails each call after this long instead of holding it
      commandTimeout: timeoutMs,
      connectTimeout: timeoutMs,
    })
    // ioredis reports connection errors here as well as to the calls; the calls carry them on
    this.client.on('error', () => {})
  }

  private async call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run()
    } catch (err) {
      throw isRedisReply(err) ? err : outage(err)
    }
  }

  private rewrite(command: RedisCommand): RedisCommand {
    const name = String(command[0]).toUpperCase()
    if (name === 'EVAL' && typeof command[1] === 'string' && command[1].startsWith('#!lua')) {
      const stripped = command[1].replace(/^#!lua[^\n]*\n/, '')
      this.strippedSha.set(sha1(command[1]), sha1(stripped))
      return [command[0], stripped, ...command.slice(2)]
    }
    if (name === 'EVALSHA') {
      const mapped = this.strippedSha.get(String(command[1]))
      if (mapped) return [command[0], mapped, ...command.slice(2)]
    }
    return command
  }

  async exec(command: RedisCommand) {
    const [name, ...args] = this.rewrite(command)
    return flatReply(await this.call(() => this.client.call(String(name), ...args)))
  }

  async pipeline(commands: RedisCommand[]) {
    const pipe = this.client.pipeline()
    for (const command of commands) {
      const [name, ...args] = this.rewrite(command)
      pipe.call(String(name), ...args)
    }
    return toResults(await this.call(() => pipe.exec()))
  }

  async transaction(commands: RedisCommand[]) {
    const multi = this.client.multi()
    for (const command of commands) {
      const [name, ...args] = this.rewrite(command)
      multi.call(String(name), ...args)
    }
    return toResults(await this.call(() => multi.exec()))
  }

  async close() {
    await this.client.quit().catch(() => this.client.disconnect())
  }
}

/** ioredis turns HGETALL replies into objects even through call(); the REST protocol carries the flat array. */
function flatReply(reply: unknown): unknown {
  if (reply && typeof reply === 'object' && !Array.isArray(reply) && !Buffer.isBuffer(reply)) return Object.entries(reply).flat()
  return reply
}

/** Only Redis's own reply (ReplyError) answers a command; anything else (a timeout, a refused or lost connection) is an outage. */
const isRedisReply = (err: unknown) => (err as Error)?.name === 'ReplyError'
const outage = (err: unknown) => new StoreUnavailableError('key/value store', 5, { cause: err })

/** ioredis fails each command of a pipeline or transaction on its own: one that never reached Redis fails the whole call, as a single command does. */
function toResults(replies: [Error | null, unknown][] | null): CommandResult[] {
  if (!replies) return [{ error: 'EXECABORT transaction aborted' }]
  return replies.map(([err, result]) => {
    if (!err) return { result: flatReply(result) }
    if (!isRedisReply(err)) throw outage(err)
    return { error: err.message }
  })
}
