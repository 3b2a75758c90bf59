import { type IncomingHttpHeaders, type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'

/** A local SMTP server on 127.0.0.1 that keeps what it receives. */
export async function smtpSink() {
  const received: { to: string[]; raw: string }[] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, done) {
      let raw = ''
      stream.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')))
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw })
        done()
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = ((server as unknown as { server: Server }).server.address() as AddressInfo).port
  return { received, url: `smtp://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

/** A local webhook receiver on 127.0.0.1: answers each request to a path with the next status planned for it (200 once none is left). */
export async function webhookSink() {
  const requests: { path: string; headers: IncomingHttpHeaders; body: string; status: number }[] = []
  const plan = new Map<string, number[]>()
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')))
    req.on('end', () => {
      const status = plan.get(req.url ?? '')?.shift() ?? 200
      requests.push({ path: req.url ?? '', headers: req.headers, body, status })
      res.writeHead(status).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { requests, plan, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}
