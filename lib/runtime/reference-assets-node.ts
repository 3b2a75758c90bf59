import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/** The reference page's files, read once from the installed swagger-ui-dist package. */
export function swaggerUiAssets() {
  const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
  const cache = new Map<string, Promise<Uint8Array>>()
  return (file: string) => {
    let bytes = cache.get(file)
    if (!bytes) cache.set(file, (bytes = readFile(join(dir, file))))
    return bytes
  }
}
