import { Command, InvalidArgumentError } from 'commander'
import { createApiKey, createOrg, listApiKeys, listOrgs, revokeApiKey } from '../lib/accounts/admin'
import { ApiError } from '../lib/core/errors'
import { acceptInvitation, organizationsOf } from '../lib/accounts/members'
import { mintSignInLink } from '../lib/accounts/signin'
import { emailSchema } from '../lib/accounts/team'
import { runCli } from '../lib/runtime/failure'
import { deploymentPlan, planSetting } from '../lib/runtime/env'
import { planFor } from '../lib/accounts/plans'
import { dataDir, openNodeStores } from '../lib/runtime/node'
import { FileQuarantine } from '../lib/ingest/quarantine-node'
import { join } from 'node:path'

/** The account area's stand-in. Prints only JSON on stdout; works with or without a running server. */
const program = new Command('admin').description('Manage organizations and API keys (keys are never created through the API).')
program.configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) })

async function withStore<T>(work: (stores: Awaited<ReturnType<typeof openNodeStores>>) => Promise<T>) {
  const stores = await openNodeStores(process.env, { viaRunningServer: true })
  try {
    process.stdout.write(`${JSON.stringify(await work(stores), null, 2)}\n`)
  } catch (err) {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exitCode = err instanceof ApiError && err.status === 404 ? 2 : 1
  } finally {
    await stores.close()
  }
}

const scope = (value: string) => {
  if (value !== 'read' && value !== 'write') throw new InvalidArgumentError('scope must be read or write')
  return value
}

const ownerEmail = (value: string) => {
  const parsed = emailSchema.safeParse(value)
  if (!parsed.success) throw new InvalidArgumentError('must be an e-mail address')
  return parsed.data
}

const org = program.command('org').description('Organizations')
org
  .command('create')
  .description('Create an organization; prints {"id": ...}')
  .requiredOption('--name <name>', 'organization name')
  .option('--owner <email>', "the creator's e-mail address: the organization's owner", ownerEmail)
  .action((opts: { name: string; owner?: string }) =>
    withStore(async ({ repositories }) => ({ id: (await createOrg(repositories, opts.name, new Date(), opts.owner)).id })),
  )
org
  .command('list')
  .description("List organizations, each with the plan it is on (the deployment's PLAN, as the API answers it)")
  .action(() =>
    withStore(async ({ repositories }) => {
      const deployment = deploymentPlan(planSetting.parse(process.env.PLAN || undefined))
      return (await listOrgs(repositories)).map((o) => ({
        id: o.id,
        name: o.name,
        plan: planFor(o, deployment).name,
        createdAt: o.createdAt,
      }))
    }),
  )

const key = program.command('key').description('API keys')
key
  .command('create')
  .description('Create a key; prints the secret once with its prefix, scope and id')
  .requiredOption('--org <id>', 'organization id')
  .requiredOption('--name <name>', 'key name')
  .option('--scope <scope>', 'read or write', scope, 'read')
  .option('--site <site>', 'bind the key to one site (UUID or snippet id): a site-bound ingest key')
  .action((opts: { org: string; name: string; scope: 'read' | 'write'; site?: string }) =>
    withStore(async ({ repositories }) => {
      const { key, prefix, scope, id, siteId } = await createApiKey(
        repositories,
        { orgId: opts.org, name: opts.name, scope: opts.scope, siteId: opts.site },
        new Date(),
      )
      return siteId ? { key, prefix, scope, id, siteId } : { key, prefix, scope, id }
    }),
  )
key
  .command('list')
  .description("List an organization's keys (never the secrets)")
  .requiredOption('--org <id>', 'organization id')
  .action((opts: { org: string }) =>
    withStore(async ({ repositories }) => (await listApiKeys(repositories, opts.org)).map(({ hash: _hash, ...meta }) => meta)),
  )
key
  .command('revoke')
  .description('Revoke a key by id; it stops working at once')
  .requiredOption('--id <id>', 'key id')
  .action((opts: { id: string }) => withStore(({ repositories }) => revokeApiKey(repositories, opts.id, new Date())))

const invitation = program.command('invitation').description('Team invitations (sent with POST /api/v1/org/members)')
invitation
  .command('accept')
  .description('Accept an invitation as its invitee would in the browser; prints the new member')
  .requiredOption('--id <id>', 'invitation id')
  .action((opts: { id: string }) => withStore(({ repositories }) => acceptInvitation(repositories, opts.id, new Date())))

program
  .command('login')
  .description('Print a one-time sign-in link (15 minutes) to the web application for a member of an organization')
  .requiredOption('--email <address>', 'the member to sign in as', ownerEmail)
  .option('--url <origin>', "the server's public origin (default PUBLIC_URL, or http://127.0.0.1:PORT)")
  .action((opts: { email: string; url?: string }) =>
    withStore(async ({ repositories }) => {
      const memberships = await organizationsOf(repositories, opts.email)
      if (!memberships.length) throw new ApiError(404, `${opts.email} is not a member of any organization`)
      const origin = opts.url ?? process.env.PUBLIC_URL ?? `http://127.0.0.1:${process.env.PORT || 8787}`
      return { email: opts.email, link: await mintSignInLink(repositories, opts.email, origin, new Date()), expiresInMinutes: 15 }
    }),
  )

/** Prints a command's answer as JSON; an id that names no entry is exit code 2. */
function printQuarantine(work: (quarantine: FileQuarantine) => unknown) {
  const answer = work(new FileQuarantine(join(dataDir(process.env), 'quarantine')))
  if (answer === null) {
    process.stderr.write('error: no quarantined entry has that id\n')
    process.exitCode = 2
    return
  }
  process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`)
}

const quarantine = program
  .command('quarantine')
  .description(
    'Acknowledged rows, hits and journal lines the store refused, set aside under DATA_DIR/quarantine; kept until dropped here (works with or without a running server)',
  )
quarantine
  .command('list')
  .description('List the entries, oldest first: id, when, what (rows of a table, hits, a journal line), how many, why')
  .action(() => printQuarantine((q) => q.list()))
quarantine
  .command('show')
  .description('Print one entry in full, with its rows')
  .argument('<id>', 'entry id, as listed')
  .action((id: string) => printQuarantine((q) => q.show(id)))
quarantine
  .command('retry')
  .description(
    'Hand an entry back to the server, which repairs its text and stores it within seconds (or at its next start); what is refused again returns here',
  )
  .argument('<id>', 'entry id, as listed')
  .action((id: string) => printQuarantine((q) => (q.retry(id) ? { id, retrying: true } : null)))
quarantine
  .command('drop')
  .description('Delete an entry for good: its rows are never stored')
  .argument('<id>', 'entry id, as listed')
  .action((id: string) => printQuarantine((q) => (q.drop(id) ? { id, dropped: true } : null)))

await runCli(program)
