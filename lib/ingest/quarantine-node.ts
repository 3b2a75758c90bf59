import { closeSync, fdatasyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { Quarantine, QuarantineEntry, QuarantinedContent } from './quarantine'

/*
 * The Node home's quarantine: one JSON file an entry in `DATA_DIR/quarantine`, written to a
 * temporary name, synced and renamed, so an entry is whole or absent. The admin CLI reads and
 * drops the files itself (it needs no engine); `retry` moves an entry into `retry/`, which the
 * server takes back on its next flush (or at its next start).
 */

const ENTRY = /^([A-Za-z0-9._-]+)\.json$/
const fileId = (id: string) => id.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 200)

function writeDurably(path: string, text: string) {
  const temporary = `${path}.tmp`
  const fd = openSync(temporary, 'w', 0o600)
  try {
    writeSync(fd, text)
    fdatasyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(temporary, path)
}

/** A summary of an entry, without its rows: what `quarantine list` prints. */
export interface QuarantineSummary {
  id: string
  at: string
  kind: QuarantineEntry['kind']
  table?: string
  /** Rows, hits or lines held */
  count: number
  reason: string
  retries: number
  /** Handed back to the server, waiting for its next flush */
  retrying: boolean
}

export class FileQuarantine implements Quarantine {
  private readonly retryDir: string

  /** Makes no folder until an entry is set aside: a server starting on a full disk must not fail here. */
  constructor(readonly dir: string) {
    this.retryDir = join(dir, 'retry')
  }

  private ids(dir = this.dir): string[] {
    let names: string[]
    try {
      names = readdirSync(dir)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw err
    }
    return names
      .map((name) => ENTRY.exec(name)?.[1])
      .filter((id): id is string => id !== undefined)
      .sort()
  }

  setAside(id: string, content: QuarantinedContent, reason: string, retries = 0): void {
    const name = fileId(id)
    const entry: QuarantineEntry = { ...content, id: name, at: new Date().toISOString(), reason, retries }
    mkdirSync(this.dir, { recursive: true, mode: 0o700 })
    writeDurably(join(this.dir, `${name}.json`), JSON.stringify(entry))
  }

  /** Entries set aside, those handed back included: read from the folder, which the admin CLI changes too. */
  count(): number {
    return this.ids().length + this.ids(this.retryDir).length
  }

  /** Every entry, oldest first, without its rows; those handed back and not yet taken are marked. */
  list(): QuarantineSummary[] {
    const summaries = [...this.ids().map((id) => [id, false] as const), ...this.ids(this.retryDir).map((id) => [id, true] as const)].map(
      ([id, retrying]) => {
        const entry = this.read(id, retrying)
        return {
          id,
          at: entry.at,
          kind: entry.kind,
          ...(entry.kind === 'rows' ? { table: entry.table } : {}),
          count: entry.kind === 'rows' ? entry.rows.length : entry.kind === 'hits' ? entry.hits.length : 1,
          reason: entry.reason,
          retries: entry.retries,
          retrying,
        }
      },
    )
    return summaries.sort((a, b) => a.at.localeCompare(b.at))
  }

  private read(id: string, retrying = false): QuarantineEntry {
    return JSON.parse(readFileSync(join(retrying ? this.retryDir : this.dir, `${id}.json`), 'utf8')) as QuarantineEntry
  }

  /** One entry in full, or null when there is none of that id. */
  show(id: string): QuarantineEntry | null {
    for (const retrying of [false, true]) {
      try {
        return this.read(fileId(id), retrying)
      } catch {}
    }
    return null
  }

  /** Hands an entry back to the server; false when there is none of that id. */
  retry(id: string): boolean {
    try {
      mkdirSync(this.retryDir, { recursive: true, mode: 0o700 })
      renameSync(join(this.dir, `${fileId(id)}.json`), join(this.retryDir, `${fileId(id)}.json`))
      return true
    } catch {
      return false
    }
  }

  /** Deletes an entry for good; false when there is none of that id. */
  drop(id: string): boolean {
    for (const dir of [this.dir, this.retryDir]) {
      const path = join(dir, `${fileId(id)}.json`)
      try {
        readFileSync(path)
      } catch {
        continue
      }
      rmSync(path)
      return true
    }
    return false
  }

  takeRetries(): QuarantineEntry[] {
    const taken: QuarantineEntry[] = []
    for (const id of this.ids(this.retryDir)) {
      const path = join(this.retryDir, `${id}.json`)
      let entry: QuarantineEntry
      try {
        entry = JSON.parse(readFileSync(path, 'utf8')) as QuarantineEntry
      } catch {
        continue
      }
      taken.push(entry)
    }
    return taken
  }

  /** An entry taken back is done with: stored, or set aside again under its own id. */
  settled(id: string) {
    rmSync(join(this.retryDir, `${fileId(id)}.json`), { force: true })
  }
}
