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
  const bytes = Buffer.from(text)
  const fd = openSync(temporary, 'w', 0o600)
  try {
    // a short write (the disk filled part-way) is a failed one: the entry must be whole to count
    const written = writeSync(fd, bytes)
    if (written !== bytes.length) throw Object.assign(new Error(`ENOSPC: wrote ${written} of ${bytes.length} bytes`), { code: 'ENOSPC' })
    fdatasyncSync(fd)
  } catch (err) {
    closeSync(fd)
    rmSync(temporary, { force: true })
    throw err
  }
  closeSync(fd)
  renameSync(temporary, path)
}

/** A file's JSON, or null when it is gone (the server settled it, the CLI dropped it) or unreadable. */
function readEntry(path: string): QuarantineEntry | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as QuarantineEntry
  } catch {
    return null
  }
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
  /** Entries this process claimed and has not settled yet. */
  private readonly claims = new Set<string>()

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

  /** Entries set aside, those handed back included: read from the folder, which the admin CLI changes too (0 where it cannot be read). */
  count(): number {
    try {
      return this.ids().length + this.ids(this.retryDir).length
    } catch {
      return 0
    }
  }

  /** Every entry, oldest first, without its rows; those handed back and not yet taken are marked. */
  list(): QuarantineSummary[] {
    const summaries = [...this.ids().map((id) => [id, false] as const), ...this.ids(this.retryDir).map((id) => [id, true] as const)].map(
      ([id, retrying]) => {
        const entry = readEntry(join(retrying ? this.retryDir : this.dir, `${id}.json`))
        if (!entry) return null
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
    return summaries.filter((s) => s !== null).sort((a, b) => a.at.localeCompare(b.at))
  }

  /** One entry in full, or null when there is none of that id. */
  show(id: string): QuarantineEntry | null {
    return readEntry(join(this.dir, `${fileId(id)}.json`)) ?? readEntry(join(this.retryDir, `${fileId(id)}.json`))
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

  /**
   * Claims the entries handed back, each by renaming it to `<id>.taking` so that a second pass, or
   * the CLI handing the same id back again, never takes the same file; claims a process left
   * unsettled (it stopped part-way) are taken again first.
   */
  takeRetries(): QuarantineEntry[] {
    const taken: QuarantineEntry[] = []
    let names: string[]
    try {
      names = readdirSync(this.retryDir)
    } catch {
      return taken
    }
    for (const name of names.sort()) {
      const claimed = /^(.+)\.taking$/.exec(name)?.[1] ?? ENTRY.exec(name)?.[1]
      if (!claimed) continue
      const claim = join(this.retryDir, `${claimed}.taking`)
      if (!name.endsWith('.taking')) {
        try {
          renameSync(join(this.retryDir, name), claim)
        } catch {
          continue
        }
      } else if (this.claims.has(claimed)) continue
      const entry = readEntry(claim)
      if (!entry) continue
      this.claims.add(claimed)
      taken.push(entry)
    }
    return taken
  }

  /** An entry taken back is done with: stored, or set aside again under ids of its own. */
  settled(id: string) {
    rmSync(join(this.retryDir, `${fileId(id)}.taking`), { force: true })
    this.claims.delete(fileId(id))
  }
}
