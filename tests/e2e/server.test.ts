import { connect } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, cli, startServer, demoKeys } from './server-process'

describe('the Node server on embedded stores', () => {
  const env = { DATA_DIR: tempDir('server'), REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '', LOG_LEVEL: 'info' }
  let server: RunningServer
  let readKey = ''
  let writeKey = ''
  const api = (path: string, key: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
    })

  afterAll(async () => {
    await server?.stop()
  })

  it('first start creates a demo organization, site and keys, and prints a curl line that works', async () => {
    server = await startServer(env)
    ;({ readKey, writeKey } = demoKeys(server.output()))
    const { site } = demoKeys(server.output())
    // the banner's curl lines read the exported variables, as the README's do
    const curls = [...server.output().matchAll(/curl -H "Authorization: Bearer \$KEY" "?([^"\s]+)"?/g)].map((m) =>
      m[1].replace('$SITE', site),
    )
    expect(curls).toHaveLength(2)
    for (const url of curls) expect((await fetch(url, { headers: { authorization: `Bearer ${readKey}` } })).status, url).toBe(200)
    const me = await api('/api/v1/me', readKey)
    expect((await me.json()).key.scope).toBe('read')
    const sites = await (await api('/api/v1/sites', readKey)).json()
    expect(sites.sites.map((s: { domain: string }) => s.domain)).toEqual(['demo.example.com'])
    // the banner with the keys is on stdout; stderr, the log a deployment ships, never holds a key
    expect(server.stdout()).toContain(`export KEY=${readKey} WRITE_KEY=${writeKey}`)
    expect(server.stderr()).not.toContain(readKey)
    expect(server.stderr()).not.toContain(writeKey)
  })

  it('logs one JSON line per request, without credential values, and answers its id as X-Request-Id', async () => {
    const before = server.output().length
    const given = await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${readKey}`, 'x-request-id': 'trace-123' } })
    expect(given.headers.get('x-request-id')).toBe('trace-123')
    const forged = await fetch(`${server.url}/api/v1/proxy-config?key=sk_secret_value&x=1`, { headers: { 'x-request-id': 'a"b\\nc' } })
    const forgedId = forged.headers.get('x-request-id')!
    expect(forgedId).toMatch(/^[0-9a-f-]{36}$/)
    await new Promise((r) => setTimeout(r, 200))
    const lines = server
      .output()
      .slice(before)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
    expect(lines).toContainEqual({
      time: expect.any(String),
      level: 'info',
      method: 'GET',
      path: '/api/v1/me',
      status: 200,
      ms: expect.any(Number),
      requestId: 'trace-123',
      keyPrefix: readKey.slice(0, 10),
    })
    const keyed = lines.find((l) => l.requestId === forgedId)
    expect(keyed).toMatchObject({ path: '/api/v1/proxy-config?key=redacted&x=1', status: 401 })
    expect(server.output()).not.toContain('sk_secret_value')
  })

  it('answers requests the HTTP parser refuses in JSON too: a lowercase method, raw bytes in the URL, huge headers', async () => {
    const { port } = new URL(server.url)
    const raw = (request: Buffer) =>
      new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.end(request))
        let data = ''
        socket.on('data', (d) => (data += d.toString('latin1')))
        socket.on('error', reject)
        socket.on('close', () => {
          const [head, body] = data.split('\r\n\r\n')
          resolve({ status: Number(head.split(' ')[1]), type: /content-type: (.*)/i.exec(head)?.[1] ?? '', body })
        })
      })
    const cases: [Buffer, number][] = [
      [Buffer.from('get /api/v1/me HTTP/1.1\r\nHost: x\r\n\r\n'), 400],
      [
        Buffer.concat([
          Buffer.from('GET /api/v1/stats?site_id='),
          Buffer.from([0xff, 0xfe, 0x00]),
          Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
        ]),
        400,
      ],
      [Buffer.from(`GET /api/v1/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), 431],
    ]
    for (const [request, status] of cases) {
      const res = await raw(request)
      expect(res.status, request.subarray(0, 40).toString('latin1')).toBe(status)
      expect(res.type).toMatch(/application\/json/)
      expect(JSON.parse(res.body)).toEqual({ error: expect.any(String) })
    }
    // percent-encoded bytes that are not UTF-8 reach the app, which answers in JSON as well
    const encoded = await fetch(`${server.url}/api/v1/stats?site_id=%ff%fe`, { headers: { authorization: `Bearer ${readKey}` } })
    expect(encoded.status).toBeLessThan(500)
    expect(await encoded.json()).toEqual({ error: expect.any(String) })
  })

  it('the admin CLI and the migration runner work while the server owns the stores', async () => {
    const org = await cli('admin', ['org', 'create', '--name', 'CLI Org', '--owner', 'Owner@Example.com'], env)
    expect(org).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/) })
    const key = await cli('admin', ['key', 'create', '--org', org.id, '--name', 'ci', '--scope', 'write'], env)
    expect(Object.keys(key).sort()).toEqual(['id', 'key', 'prefix', 'scope'])
    const me = await (await api('/api/v1/me', key.key)).json()
    expect(me).toMatchObject({ key: { id: key.id, scope: 'write' }, organization: { id: org.id, name: 'CLI Org' } })
    // the creator owns it; an invitation (e-mailed to the outbox, no SMTP here) is accepted through the CLI
    const invited = await (
      await api('/api/v1/org/members', key.key, { method: 'POST', body: JSON.stringify({ email: 'new@example.com', role: 'admin' }) })
    ).json()
    expect(invited).toMatchObject({ email: 'new@example.com', role: 'admin', emailed: true })
    const { readdirSync, readFileSync } = await import('node:fs')
    const outbox = readdirSync(`${env.DATA_DIR}/outbox`).map((f) => readFileSync(`${env.DATA_DIR}/outbox/${f}`, 'utf8'))
    expect(outbox.some((mail) => mail.includes('To: new@example.com') && mail.includes(invited.id))).toBe(true)
    expect(await cli('admin', ['invitation', 'accept', '--id', invited.id], env)).toMatchObject({
      email: 'new@example.com',
      role: 'admin',
      orgId: org.id,
    })
    const team = await (await api('/api/v1/org/members', key.key)).json()
    expect(team.members.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([
      ['owner@example.com', 'owner'],
      ['new@example.com', 'admin'],
    ])
    expect(team.invitations).toEqual([])
    const listed = await cli('admin', ['key', 'list', '--org', org.id], env)
    expect(listed).toEqual([expect.objectContaining({ id: key.id, prefix: key.prefix, revokedAt: null })])
    expect(JSON.stringify(listed)).not.toContain(key.key)
    expect(await cli('admin', ['key', 'revoke', '--id', key.id], env)).toEqual({ revoked: true, id: key.id })
    expect((await api('/api/v1/me', key.key)).status).toBe(401)
    expect(await cli('migrate', [], env)).toEqual({ clickhouse: 'embedded, through the running server', applied: [] })
  })

  it('imports raw hits and generates demo traffic while the server runs', async () => {
    const { writeFileSync } = await import('node:fs')
    const sites = await (await api('/api/v1/sites', readKey)).json()
    const demo = sites.sites[0]
    const file = `${env.DATA_DIR}/hits.ndjson`
    const hit = {
      timestamp: '2026-11-01T10:00:00Z',
      site: demo.snippetId,
      name: 'pageview',
      url: `https://${demo.domain}/imported`,
      ip: '8.8.8.8',
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
    }
    writeFileSync(file, [JSON.stringify(hit), 'oops', JSON.stringify({ ...hit, name: 'Signup' })].join('\n'))
    expect(await cli('import', ['--file', file], env)).toEqual({ imported: 2, rejected: 1 })
    const generated = await cli('demo-traffic', ['--site', demo.snippetId, '--days', '2', '--visitors-per-day', '20'], env)
    expect(generated.imported).toBeGreaterThan(40)
    expect(generated.rejected).toBe(0)
  })

  it('a site answered 201 survives SIGKILL right after, with the keys', async () => {
    const created = await api('/api/v1/sites', writeKey, { method: 'POST', body: JSON.stringify({ domain: 'durable.example.com' }) })
    expect(created.status).toBe(201)
    const site = await created.json()
    expect(await server.stop('SIGKILL')).toBeNull()
    server = await startServer(env)
    expect(server.output()).not.toContain('First start')
    // two organizations by now (the CLI made one): the lines say how to find the id
    expect(server.output()).toContain('npm run -s admin -- org list')
    expect(server.output()).toContain('npm run -s admin -- key create --org <id from org list> --name me --scope read')
    const read = await api(`/api/v1/sites/${site.snippetId}`, readKey)
    expect(read.status).toBe(200)
    expect((await read.json()).id).toBe(site.id)
  })

  it('stops cleanly on SIGTERM, and the CLIs then open the stores directly', async () => {
    expect(await server.stop('SIGTERM')).toBe(0)
    const orgs = await cli('admin', ['org', 'list'], env)
    expect(orgs.map((o: { name: string }) => o.name).sort()).toEqual(['CLI Org', 'Demo organization'])
    // the plan each is on, as the API answers it: the deployment's (PLAN unset: unlimited), not the record's default
    expect(orgs.map((o: { plan: string }) => o.plan)).toEqual(['unlimited', 'unlimited'])
    server = await startServer(env)
    expect((await api('/api/v1/me', writeKey)).status).toBe(200)
  })

  it('stores exactly the N hits it accepted under concurrent load, flushing on SIGTERM', async () => {
    const sites = await (await api('/api/v1/sites', readKey)).json()
    const demo = sites.sites[0]
    const n = 3000
    const statuses: number[] = []
    for (let batch = 0; batch < n / 300; batch++) {
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 300 }, (_, i) =>
            fetch(`${server.url}/api/event`, {
              method: 'POST',
              headers: {
                'content-type': 'text/plain',
                'user-agent': `Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0 load-${batch}-${i % 37}`,
              },
              body: JSON.stringify({ site: demo.snippetId, name: 'pageview', url: `https://${demo.domain}/load-test/${batch}/${i}` }),
            }).then((r) => r.status),
          ),
        )),
      )
    }
    expect(statuses.filter((s) => s === 202)).toHaveLength(n)
    // SIGTERM right away: what is still buffered must be flushed before exit
    expect(await server.stop('SIGTERM')).toBe(0)
    const { EmbeddedClickHouse } = await import('../../lib/storage/clickhouse/chdb')
    const clickhouse = new EmbeddedClickHouse(`${env.DATA_DIR}/clickhouse`)
    const [row] = await clickhouse.query<{ n: string; paths: string }>(
      "SELECT count() AS n, uniqExact(pathname) AS paths FROM events WHERE startsWith(pathname, '/load-test/')",
    )
    await clickhouse.close()
    expect(row).toEqual({ n: String(n), paths: String(n) })
  })

  it('admin --help works at every level', async () => {
    const { execFile } = await import('node:child_process')
    const help = (args: string[]) =>
      new Promise<string>((resolve) =>
        execFile(
          process.execPath,
          ['--import', 'tsx', 'scripts/admin.ts', ...args, '--help'],
          { env: { ...process.env, ...env } },
          (_e, out) => resolve(out),
        ),
      )
    expect(await help([])).toMatch(/Usage: admin/)
    expect(await help(['key'])).toMatch(/create/)
    expect(await help(['key', 'create'])).toMatch(/--scope/)
    expect(await help(['org', 'create'])).toMatch(/--name/)
  })
})
