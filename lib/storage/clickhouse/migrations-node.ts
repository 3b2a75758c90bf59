import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Migration, parseMigrationFile } from './migrate'

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../clickhouse/', import.meta.url))

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => parseMigrationFile(f, readFileSync(`${dir}/${f}`, 'utf8')))
}
