import { getKeyIndexes } from '@ioredis/commands'
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
