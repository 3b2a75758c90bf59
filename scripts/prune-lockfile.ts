import { readFileSync, writeFileSync } from 'node:fs'

/**
 * chdb lists per-platform libraries the npm registry here does not serve; npm records the
 * dependency but no entry, and `npm ci` then refuses the lockfile. Run after `npm install <pkg>`.
 */
const file = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(file, 'utf8'))
let removed = 0
for (const [path, entry] of Object.entries(lock.packages as Record<string, { optionalDependencies?: Record<string, string> }>)) {
  for (const name of Object.keys(entry.optionalDependencies ?? {})) {
    if (!lock.packages[`node_modules/${name}`] && !lock.packages[`${path}/node_modules/${name}`]) {
      delete entry.optionalDependencies![name]
      removed++
    }
  }
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`)
process.stdout.write(`${JSON.stringify({ removed })}\n`)
