import { describe, expect, it } from 'vitest'
import { renderMigration } from '../../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../../lib/storage/clickhouse/migrations-node'
import { testClickHouse } from '../helpers'

/** The statement's kind: its first words, upper-cased (`CREATE TABLE`, `ALTER TABLE`, `INSERT INTO`...). */
const kind = (statement: string) => statement.trim().split(/\s+/).slice(0, 2).join(' ').toUpperCase()

describe('migrations in cluster mode', () => {
  const statements = loadMigrations().flatMap((m) =>
    renderMigration(m.sql, 'main').map((sql) => ({ migration: `${m.version}_${m.name}`, sql })),
  )

  it('parse as ClickHouse statements: the engine formats every one', async () => {
    const clickhouse = await testClickHouse()
    expect(statements.length).toBeGreaterThan(40)
    for (const { migration, sql } of statements) {
      const [row] = await clickhouse
        .query<{ formatted: string }>('SELECT formatQuery({sql:String}) AS formatted', { sql })
        .catch((error: Error) => {
          throw new Error(`${migration}: ${error.message}\n${sql}`)
        })
      expect(row.formatted, migration).toMatch(/\S/)
    }
  })

  it('run every schema change ON CLUSTER and keep every table on a Replicated engine', () => {
    for (const { migration, sql } of statements) {
      const k = kind(sql)
      if (/^(CREATE|ALTER|DROP|RENAME|TRUNCATE|OPTIMIZE) /.test(k)) {
        expect(sql, `${migration}: ${k} without ON CLUSTER`).toMatch(/\bON CLUSTER main\b/)
      }
      for (const engine of sql.matchAll(/ENGINE\s*=\s*(\w+)/g)) {
        if (/MergeTree$/.test(engine[1])) expect(engine[1], `${migration}: ${engine[1]}`).toMatch(/^Replicated/)
      }
    }
  })

  it('leave a one-server install without cluster words', () => {
    for (const m of loadMigrations()) {
      for (const sql of renderMigration(m.sql)) {
        expect(sql, m.name).not.toMatch(/ON CLUSTER|Replicated|\{\{/)
      }
    }
  })
})
