import { getKeyIndexes } from '@ioredis/commands'
import type { Requester, UpstashRequest, UpstashResponse } from '@upstash/redis'
import type { CommandResult, RawRedis, RedisCommand } from './raw'

/**
 * `REDIS_PREFIX`: every key a command names is written under the prefix, so installations (or
 * test runs) can share one Redis database. Which arguments are keys comes from Redis's own command
 * table (scripts name theirs in KEYS), so no caller needs to know about the prefix.
 */
export function prefixCommand(prefix: string, command: RedisCommand): RedisCommand {
  const [name, ...args] = command
  let indexes: number[]
  try {
    indexes = getKeyIndexes(String(name).toLowerCase(), args.map(String))
  } catch {
    return command
  }
  if (!indexes.length) return command
  const out = [...args]
  for (const i of indexes) out[i] = `${prefix}${out[i]}`
  return [name, ...out]
}

/** A raw Redis whose every key is under `prefix`. */
export function prefixedRaw(raw: RawRedis, prefix: string): RawRedis {
  const each = (commands: RedisCommand[]) => commands.map((c) => prefixCommand(prefix, c))
  return {
    exec: (command) => raw.exec(prefixCommand(prefix, command)),
    pipeline: (commands): Promise<CommandResult[]> => raw.pipeline(each(commands)),
    transaction: (commands): Promise<CommandResult[]> => raw.transaction(each(commands)),
    close: () => raw.close(),
  }
}

/** An Upstash REST requester whose every key is under `prefix`. */
export function prefixedUpstash(options: { url: string; token: string; prefix: string; fetch?: typeof fetch }): Requester {
  const send = options.fetch ?? fetch
  const base = options.url.replace(/\/$/, '')
  return {
    async request<T>(req: UpstashRequest): Promise<UpstashResponse<T>> {
      const path = req.path ?? []
      const body =
        path[0] === 'pipeline' || path[0] === 'multi-exec'
          ? (req.body as RedisCommand[]).map((c) => prefixCommand(options.prefix, c))
          : prefixCommand(options.prefix, req.body as RedisCommand)
      const res = await send([base, ...path].join('/'), {
        method: 'POST',
        headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      const answer = (await res.json()) as UpstashResponse<T>
      if (!res.ok && !Array.isArray(answer) && !answer.error) throw new Error(`Upstash answered ${res.status}`)
      return answer
    },
  }
}
