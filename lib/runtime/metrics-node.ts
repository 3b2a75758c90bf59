import { createHash, timingSafeEqual } from 'node:crypto'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Requester, UpstashRequest, UpstashResponse } from '@upstash/redis'
import type { ClickHouse } from '../storage/clickhouse/types'
import { StoreUnavailableError } from '../storage/errors'
import type { Metrics } from '../sites/domain-services'
import { droppedOutputWrites } from './output-node'

/**
 * The Node server's operations metrics, in the Prometheus text format (prom-client): requests,
 * hits, the journal, ClickHouse and the key/value store, and the scheduled jobs. One registry per
 * process; served at GET /metrics only when METRICS_TOKEN is set, to callers sending it as a
 * Bearer token, since it describes the deployment.
 */
export class NodeMetrics {
  readonly registry = new Registry()
  private readonly seconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
  readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'Requests answered, by declared route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [this.registry],
  })
  readonly requestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer a request, by declared route, method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: this.seconds,
    registers: [this.registry],
  })
  readonly hitsAccepted = new Counter({
    name: 'events_accepted_total',
    help: 'Hits accepted to be stored (browser hits, collected bot hits, imported hits)',
    registers: [this.registry],
  })
  readonly hitsDropped = new Counter({
    name: 'events_dropped_total',
    help: 'Hits taken in and not stored, by reason (bot, localhost, unknown-hostname, excluded-ip, excluded-path, kind-off, not-collecting, invalid, ...)',
    labelNames: ['reason'],
    registers: [this.registry],
  })
  readonly journaled = new Counter({
    name: 'events_journaled_total',
    help: 'Rows made durable in the journal (acknowledged), and refused by it (a full disk: answered 503)',
    labelNames: ['result'],
    registers: [this.registry],
  })
  readonly stored = new Counter({
    name: 'events_stored_total',
    help: 'Rows inserted into ClickHouse by the buffered sink, by table',
    labelNames: ['table'],
    registers: [this.registry],
  })
  readonly quarantined = new Counter({
    name: 'events_quarantined_total',
    help: 'Acknowledged rows the store refused for what they hold, set aside in the quarantine (admin quarantine list), by table',
    labelNames: ['table'],
    registers: [this.registry],
  })
  readonly insertFailures = new Counter({
    name: 'events_insert_failures_total',
    help: 'Inserts of the buffered sink that failed (retried under the same deduplication token), by table',
    labelNames: ['table'],
    registers: [this.registry],
  })
  readonly insertSeconds = new Histogram({
    name: 'clickhouse_insert_duration_seconds',
    help: 'Time of one insert of the buffered sink, by table',
    labelNames: ['table'],
    buckets: this.seconds,
    registers: [this.registry],
  })
  readonly querySeconds = new Histogram({
    name: 'clickhouse_query_duration_seconds',
    help: 'Time of one ClickHouse statement (query: a read; command: DDL, mutations, INSERT ... SELECT; insert: rows)',
    labelNames: ['kind'],
    buckets: this.seconds,
    registers: [this.registry],
  })
  readonly queryErrors = new Counter({
    name: 'clickhouse_errors_total',
    help: 'ClickHouse statements that failed, by kind and whether the engine was unavailable (outage) or refused it (error)',
    labelNames: ['kind', 'cause'],
    registers: [this.registry],
  })
  readonly kvSeconds = new Histogram({
    name: 'kv_call_duration_seconds',
    help: 'Time of one key/value call (a command, a pipeline or a transaction)',
    labelNames: ['call'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  })
  readonly kvErrors = new Counter({
    name: 'kv_errors_total',
    help: 'Key/value calls that failed: outage (timed out, refused, full disk) or error (the store refused the command)',
    labelNames: ['call', 'cause'],
    registers: [this.registry],
  })
  readonly logWritesDropped = new Counter({
    name: 'log_writes_dropped_total',
    help: 'Writes to standard output or error that failed (a full disk, a closed pipe) and were dropped; the server goes on',
    registers: [this.registry],
    collect() {
      this.reset()
      this.inc(droppedOutputWrites())
    },
  })
  readonly jobRuns = new Counter({
    name: 'job_runs_total',
    help: 'Runs of the scheduled jobs (rollups, crawls, report and alert delivery, imports), by job and result',
    labelNames: ['job', 'result'],
    registers: [this.registry],
  })
  readonly jobSeconds = new Histogram({
    name: 'job_duration_seconds',
    help: 'Time of one run of a scheduled job',
    labelNames: ['job'],
    buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900],
    registers: [this.registry],
  })

  constructor() {
    collectDefaultMetrics({ register: this.registry })
  }

  private backlog: () => { rows: number; oldestAt: number | null; replaying: boolean; quarantined: number } = () => ({
    rows: 0,
    oldestAt: null,
    replaying: false,
    quarantined: 0,
  })
  private journalWatched = false

  /** The journal's depth and age, read when the metrics are (the home's sink and journal; the last one given). */
  watchJournal(backlog: () => { rows: number; oldestAt: number | null; replaying: boolean; quarantined: number }) {
    this.backlog = backlog
    if (this.journalWatched) return
    this.journalWatched = true
    const read = () => this.backlog()
    new Gauge({
      name: 'journal_pending_rows',
      help: 'Rows acknowledged and in the journal, not yet stored in ClickHouse',
      registers: [this.registry],
      collect() {
        this.set(read().rows)
      },
    })
    new Gauge({
      name: 'journal_oldest_pending_seconds',
      help: 'Age of the oldest acknowledged row not yet stored (0 when none waits)',
      registers: [this.registry],
      collect() {
        const { oldestAt } = read()
        this.set(oldestAt === null ? 0 : (Date.now() - oldestAt) / 1000)
      },
    })
    new Gauge({
      name: 'journal_replaying',
      help: '1 while the journal of the previous run is being stored (the instance is not ready)',
      registers: [this.registry],
      collect() {
        this.set(read().replaying ? 1 : 0)
      },
    })
    new Gauge({
      name: 'quarantine_entries',
      help: 'Entries in the quarantine: acknowledged rows, hits or journal lines the store refused, kept until an operator drops them',
      registers: [this.registry],
      collect() {
        this.set(read().quarantined)
      },
    })
  }

  /** ClickHouse with each statement timed. */
  timedClickHouse(clickhouse: ClickHouse): ClickHouse {
    const timed =
      <A extends unknown[], R>(kind: string, run: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        const end = this.querySeconds.startTimer({ kind })
        try {
          return await run(...args)
        } catch (err) {
          this.queryErrors.inc({ kind, cause: err instanceof StoreUnavailableError ? 'outage' : 'error' })
          throw err
        } finally {
          end()
        }
      }
    return {
      query: timed('query', clickhouse.query.bind(clickhouse)) as ClickHouse['query'],
      command: timed('command', clickhouse.command.bind(clickhouse)),
      insert: timed('insert', clickhouse.insert.bind(clickhouse)),
      close: () => clickhouse.close(),
    }
  }

  /** A key/value requester with each call timed and its failures counted. */
  timedRequester(requester: Requester): Requester {
    return {
      request: async <T>(req: UpstashRequest): Promise<UpstashResponse<T>> => {
        const call = req.path?.[0] ?? 'command'
        const end = this.kvSeconds.startTimer({ call })
        try {
          const answer = await requester.request<T>(req)
          if (!Array.isArray(answer) && answer?.error) this.kvErrors.inc({ call, cause: 'error' })
          return answer
        } catch (err) {
          this.kvErrors.inc({ call, cause: err instanceof StoreUnavailableError ? 'outage' : 'error' })
          throw err
        } finally {
          end()
        }
      },
    }
  }

  /** What the app records through, answering to `token`. */
  forApp(token: string): Metrics {
    const expected = createHash('sha256').update(token).digest()
    return {
      admits: async (request) => {
        const presented = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? ''
        // compared in constant time, as digests of equal length
        return timingSafeEqual(createHash('sha256').update(presented).digest(), expected)
      },
      render: async () => ({ contentType: this.registry.contentType, body: await this.registry.metrics() }),
      request: (route, method, status, seconds) => {
        const labels = { route, method, status: String(status) }
        this.requests.inc(labels)
        this.requestSeconds.observe(labels, seconds)
      },
      hits: (outcomes) => {
        for (const outcome of outcomes) {
          if (outcome.status === 'stored') this.hitsAccepted.inc()
          else this.hitsDropped.inc({ reason: outcome.code ?? (outcome.status === 'rejected' ? 'invalid' : outcome.status) })
        }
      },
      job: (name, ok, seconds) => {
        this.jobRuns.inc({ job: name, result: ok ? 'ok' : 'failed' })
        this.jobSeconds.observe({ job: name }, seconds)
      },
    }
  }
}

/** The process's metrics: every store and the app of this process record into it. */
export const nodeMetrics = new NodeMetrics()
