/**
 * `node:stream/web` in the Worker's bundle (wrangler.toml, [alias]): the classes it exports are web
 * globals on Workers, so the bundle imports nothing of Node's. csv-parse's stream parser (the
 * Plausible import) imports two of them from Node's module.
 */
export const { TransformStream, CountQueuingStrategy, ReadableStream, WritableStream, TextDecoderStream } = globalThis
