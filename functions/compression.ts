import type { MiddlewareHandler } from 'hono'
import { parseAccept } from 'hono/utils/accept'
import { COMPRESSIBLE_CONTENT_TYPE_REGEX } from 'hono/utils/compress'

/** Smaller answers are sent as they are: compressing them saves less than it costs. */
export const COMPRESS_FROM_BYTES = 1024

const ENCODINGS = ['gzip', 'deflate'] as const
type Encoding = (typeof ENCODINGS)[number]

/** The encoding the client accepts with the highest weight (gzip first on a tie), if any. */
export function acceptedEncoding(header: string | undefined): Encoding | undefined {
  if (!header) return undefined
  const accepts = parseAccept(header)
  const weight = (name: string) => accepts.find((a) => a.type.toLowerCase() === name)?.q ?? accepts.find((a) => a.type === '*')?.q ?? 0
  let best: { encoding: Encoding; q: number } | undefined
  for (const encoding of ENCODINGS) {
    const q = weight(encoding)
    if (q > 0 && (!best || q > best.q)) best = { encoding, q }
  }
  return best?.encoding
}

/**
 * Compresses answers of a compressible type (JSON, scripts, HTML; event streams never) with gzip or
 * deflate as the client accepts, when they are COMPRESS_FROM_BYTES or more.
 *
 * It decides once the answer is made, without rebuilding what it leaves as it is: `Vary` goes into
 * the answer's own headers (c.header() after the answer would make it again around its body as a
 * stream, which the Node adapter then writes in chunks), and a client that takes no compression
 * gets the answer untouched. For one that does, the body is read once, and the answer made again
 * from its bytes (compressed, or as they were when small): the adapter writes it with its length
 * in one go.
 */
export function compression(): MiddlewareHandler {
  return async (c, next) => {
    await next()
    const res = c.res
    const type = res.headers.get('content-type')
    if (
      c.req.method === 'HEAD' ||
      res.status === 204 ||
      res.status === 206 ||
      res.status === 304 ||
      !type ||
      !COMPRESSIBLE_CONTENT_TYPE_REGEX.test(type) ||
      res.headers.has('content-encoding') ||
      /(?:^|,)\s*no-transform\s*(?:,|$)/i.test(res.headers.get('cache-control') ?? '')
    )
      return
    const vary = res.headers.get('vary')
    if (vary !== '*' && !/(?:^|,)\s*accept-encoding\s*(?:,|$)/i.test(vary ?? ''))
      res.headers.set('vary', vary ? `${vary}, Accept-Encoding` : 'Accept-Encoding')
    const encoding = acceptedEncoding(c.req.header('accept-encoding'))
    const length = res.headers.get('content-length')
    if (!encoding || (length !== null && Number(length) < COMPRESS_FROM_BYTES)) return
    const { status, headers } = res
    let body = new Uint8Array(await res.arrayBuffer())
    if (body.byteLength >= COMPRESS_FROM_BYTES) {
      body = await compressed(body, encoding)
      headers.delete('content-length')
      headers.set('content-encoding', encoding)
      const etag = headers.get('etag')
      if (etag && !etag.startsWith('W/')) headers.set('etag', `W/${etag}`)
    }
    // an answer set over another is made again around its body as a stream: the first is cleared
    c.res = undefined
    c.res = new Response(body, { status, headers })
  }
}

async function compressed(body: Uint8Array<ArrayBuffer>, encoding: Encoding): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([body]).stream().pipeThrough(new CompressionStream(encoding))
  return new Uint8Array(await new Response(stream).arrayBuffer())
}
