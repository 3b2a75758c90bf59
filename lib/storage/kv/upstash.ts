import type { Requester, UpstashRequest, UpstashResponse } from '@upstash/redis'
import { StoreUnavailableError } from '../errors'
import type { RedisCommand } from './raw'

export interface UpstashOptions {
  url: string
  token: string
  /** Rewrites each command before it is sent: REDIS_PREFIX's keys (prefix.ts, kept out of the Workers bundle). */
  rewrite?: (command: RedisCommand) => RedisCommand
  /** How long one call may take, its answer read (KV_TIMEOUT_MS; 2000 when unset). */
  timeoutMs?: number
  fetch?: typeof fetch
}

/**
 * Upstash Redis over REST, for `new Redis(requester)`: one POST a call (path [] a command,
 * ['pipeline'] a list, ['multi-exec'] a transaction), as `@upstash/redis` sends it, with a timeout
 * of its own. A call that does not answer in time, cannot connect, meets a server error or is
 * throttled (429) is an outage (StoreUnavailableError, answered 503); Redis's own refusals are answers (`{error}`).
 * The sync token Upstash returns is sent back, so each call reads the writes made before it.
 */
export function upstashRequester(options: UpstashOptions): Requester {
  const send = options.fetch ?? fetch
  const base = options.url.replace(/\/$/, '')
  const timeoutMs = options.timeoutMs ?? 2000
  const { rewrite } = options
  let syncToken = ''
  return {
    async request<T>(req: UpstashRequest): Promise<UpstashResponse<T>> {
      const path = req.path ?? []
      const body = !rewrite
        ? req.body
        : path[0] === 'pipeline' || path[0] === 'multi-exec'
          ? (req.body as RedisCommand[]).map(rewrite)
          : rewrite(req.body as RedisCommand)
      let res: Response
      let answer: UpstashResponse<T>
      try {
        res = await send([base, ...path].join('/'), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${options.token}`,
            'content-type': 'application/json',
            ...(syncToken ? { 'upstash-sync-token': syncToken } : {}),
          },
          body: JSON.stringify(body),
          // the answer is read under the same timeout: a server that stalls mid-answer is an outage too
          signal: AbortSignal.timeout(timeoutMs),
        })
        // 429: the database's request or bandwidth limit, which clears by itself like an outage
        if (res.status >= 500 || res.status === 429) throw new Error(`Upstash answered ${res.status}`)
        answer = (await res.json()) as UpstashResponse<T>
      } catch (err) {
        throw new StoreUnavailableError('key/value store', 5, { cause: err })
      }
      syncToken = res.headers.get('upstash-sync-token') ?? syncToken
      if (!res.ok && !Array.isArray(answer) && !answer.error) throw new Error(`Upstash answered ${res.status}`)
      return answer
    },
  }
}
