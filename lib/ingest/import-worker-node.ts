import { parentPort } from 'node:worker_threads'
import { type NumberedLine, parseBatch } from './import'
import { enrichHit } from './rows'

/**
 * One worker thread of the import (import-workers-node.ts): parses each batch of lines it is sent
 * and answers it with each item's enrichment worked out.
 */
parentPort!.on('message', (batch: NumberedLine[]) => {
  const parsed = parseBatch(batch)
  for (const { item } of parsed) if (item && typeof item !== 'string') item.enriched = enrichHit(item.hit, item.userAgent)
  parentPort!.postMessage(parsed)
})
