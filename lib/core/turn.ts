/**
 * Resolves after a turn of the event loop (Node's setImmediate): long work cut into parts awaits
 * it between them, so requests and finished I/O are served meanwhile.
 */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
