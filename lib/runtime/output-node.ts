import { writeSync } from 'node:fs'

let dropped = 0

/** Writes to standard output or error that failed and were dropped (log_writes_dropped_total). */
export const droppedOutputWrites = () => dropped

/**
 * Makes a failed write to standard output or error (a full disk under `npm start > server.log`,
 * a reader gone from a pipe) a dropped line instead of an 'error' event no one handles, which
 * ends the process. Installed once, first thing, by the Node entry.
 */
export function dropFailedOutputWrites(streams: NodeJS.WriteStream[] = [process.stdout, process.stderr]) {
  for (const stream of streams) {
    if (stream.constructor.name === 'SyncWriteStream') {
      // a file, written synchronously: a write the disk refuses is dropped alone, so the stream
      // never errors and the lines after it are kept once there is room again
      const { fd } = stream as unknown as { fd: number }
      stream._write = (chunk: Buffer, _encoding, done) => {
        try {
          if (writeSync(fd, chunk) < chunk.length) dropped++
        } catch {
          dropped++
        }
        done()
      }
      continue
    }
    // a pipe or a terminal fails for good (EPIPE): an errored stream would buffer every later
    // write in memory, for ever, so those are dropped (and counted) as they come
    stream.on('error', () => dropped++)
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean
    stream.write = ((...args: unknown[]) => {
      if (!stream.errored && !stream.destroyed) return write(...args)
      dropped++
      const done = args.findLast((arg) => typeof arg === 'function') as (() => void) | undefined
      if (done) process.nextTick(done)
      return true
    }) as typeof stream.write
  }
}
