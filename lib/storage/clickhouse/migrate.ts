import type { ClickHouse } from './types'

export interface Migration {
  version: number
  name: string
  sql: string
}

/** `0001_events.sql` -> version 1. */
export function parseMigrationFile(fileName: string, sql: string): Migration {
  const match = /^(\d+)_([\w-]+)\.sql$/.exec(fileName)
  if (!match) throw new Error(`migration file ${fileName} must be named NNNN_name.sql`)
  return { version: Number(match[1]), name: match[2], sql }
}

/**
 * Fills the cluster placeholders: on a replicated cluster (`cluster` set) tables are created
 * `ON CLUSTER` with Replicated* engines; on one server or embedded, plain MergeTree engines.
 */
export function renderMigration(sql: string, cluster?: string): string[] {
  if (cluster && !/^[A-Za-z0-9_]+$/.test(cluster)) throw new Error('CLICKHOUSE_CLUSTER must be a plain identifier')
  return sql
    .replaceAll('{{on_cluster}}', cluster ? `ON CLUSTER ${cluster}` : '')
    .replaceAll('{{replicated}}', cluster ? 'Replicated' : '')
    .split(/;\s*(?:\n|$)/)
    .map((statement) => statement.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean)
}

/** Applies, in order, every migration not yet recorded in `schema_migrations`. Returns what it applied. */
export async function migrate(clickhouse: ClickHouse, migrations: Migration[], cluster?: string): Promise<Migration[]> {
  const onCluster = cluster ? `ON CLUSTER ${cluster}` : ''
  await clickhouse.command(
    `CREATE TABLE IF NOT EXISTS schema_migrations ${onCluster} (version UInt32, name String, applied_at DateTime DEFAULT now())
     ENGINE = ${cluster ? 'Replicated' : ''}MergeTree ORDER BY version`,
  )
  const applied = new Set(
    (await clickhouse.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => Number(r.version)),
  )
  const pending = [...migrations].sort((a, b) => a.version - b.version).filter((m) => !applied.has(m.version))
  for (const migration of pending) {
    for (const statement of renderMigration(migration.sql, cluster)) await clickhouse.command(statement)
    await clickhouse.insert('schema_migrations', [{ version: migration.version, name: migration.name }])
  }
  return pending
}
