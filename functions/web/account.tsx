import type { Hono } from 'hono'
import { z } from 'zod'
import { createApiKey, createOrg, keyMakerOf, listApiKeys, revokeApiKey } from '../../lib/accounts/admin'
import { orgNameSchema } from '../../lib/accounts/org-record'
import {
  acceptInvitationAs,
  cancelInvitation,
  checkKeyScope,
  invitationsFor,
  inviteMember,
  listTeam,
  organizationsOf,
  removeMember,
  requireRole,
  setMemberRole,
  transferOwnership,
} from '../../lib/accounts/members'
import { orgOverview } from '../../lib/operations/org'
import { MEMBER_ROLES, emailSchema } from '../../lib/accounts/team'
import { configuredOrigin } from '../../lib/network/origin'
import { DEMO_DOMAIN } from '../../lib/operations/demo'
import type { Services } from '../../lib/runtime/services'
import { createSite } from '../../lib/operations/site-lifecycle'
import { sitesOfKey } from '../../lib/sites/listing'
import { siteCreateSchema } from '../../lib/sites/sites'
import type { Site } from '../../lib/sites/sites'
import { TIMEZONES } from './format'
import { readForm } from './forms'
import { Page } from './layout'
import { ADMINS } from './api'
import { CopyScript, Field } from './settings/parts'
import { siteSettingsRoutes } from './site-settings'
import type { Membership, WebEnv } from './session'

/** The account area: organizations, their sites, keys and team. Every route here runs signed in. */
export function accountRoutes(web: Hono<WebEnv>, services: Services) {
  const email = (c: { get: (k: 'session') => WebEnv['Variables']['session'] }) => c.get('session')!.email
  /** The organization and member of a page under /orgs/{org}, for an owner or admin only (a plain member is refused, 403). */
  const adminOf = (c: { get: (k: 'membership') => Membership }, what: string) => {
    const { org, member } = c.get('membership')
    requireRole(member, ADMINS, what)
    return { org, member }
  }

  web.get('/', async (c) => {
    const address = email(c)
    const [memberships, invitations] = await Promise.all([
      organizationsOf(services.repositories, address),
      invitationsFor(services.repositories, address),
    ])
    return c.html(
      <Page title="Your organizations" email={address}>
        {invitations.length ? (
          <section class="card" aria-labelledby="invitations">
            <h2 id="invitations">Invitations</h2>
            <ul class="plain">
              {invitations.map(({ org, invitation }) => (
                <li>
                  <form method="post" action={`/app/invitations/${invitation.id}/accept`} class="row">
                    <span>
                      <strong>{org.name}</strong> invites you as {invitation.role === 'admin' ? 'an admin' : 'a member'}.
                    </span>
                    <button type="submit">Accept</button>
                  </form>
                </li>
              ))}
            </ul>
          </section>
        ) : null}
        <section class="card" aria-labelledby="orgs">
          <h1 id="orgs">Your organizations</h1>
          {memberships.length ? (
            <ul class="plain">
              {memberships.map(({ org, member }) => (
                <li class="row">
                  <a href={`/app/orgs/${org.id}`}>{org.name}</a>
                  <span class="muted">{member.role}</span>
                </li>
              ))}
            </ul>
          ) : (
            <p class="muted">You are not in any organization yet. Create one to add sites.</p>
          )}
        </section>
        <form method="post" action="/app/orgs" class="card">
          <h2>Create an organization</h2>
          <Field id="org-name" name="name" label="Name" attrs={{ required: true, maxlength: 100 }} />
          <button type="submit">Create</button>
        </form>
      </Page>,
    )
  })

  web.post('/orgs', async (c) => {
    const { name } = await readForm(c, z.object({ name: orgNameSchema }))
    const org = await createOrg(services.repositories, name, services.now(), email(c))
    return c.redirect(`/app/orgs/${org.id}`, 303)
  })

  web.post('/invitations/:id/accept', async (c) => {
    const member = await acceptInvitationAs(services.repositories, c.req.param('id'), email(c), services.now())
    return c.redirect(`/app/orgs/${member.orgId}`, 303)
  })

  // ---- an organization: overview and sites
  web.get('/orgs/:orgId', async (c) => {
    const address = email(c)
    const { org, member } = c.get('membership')
    const [overview, sites, memberships] = await Promise.all([
      orgOverview(services.repositories, org.id, services.now(), services.plan),
      sitesOfKey(services.repositories, { orgId: org.id, siteId: null }),
      organizationsOf(services.repositories, address),
    ])
    const limit = (value: number | null) => (value === null ? 'unlimited' : value.toLocaleString('en'))
    // the demo's history is imported (not counted), its live visitors collected (counted)
    const hasDemo = sites.some((s) => s.domain === DEMO_DOMAIN)
    return c.html(
      <Page title={org.name} email={address}>
        <OrgNav orgId={org.id} name={org.name} current="overview" others={memberships.map((m) => m.org)} />
        <section class="card" aria-labelledby="plan">
          <h2 id="plan">Plan and usage</h2>
          <dl class="facts">
            <div>
              <dt>Plan</dt>
              <dd>{overview.plan}</dd>
            </div>
            <div>
              <dt>Events this month</dt>
              <dd>
                {overview.usage.events.toLocaleString('en')} of {limit(overview.usage.quota)}
              </dd>
            </div>
            <div>
              <dt>Sites</dt>
              <dd>
                {overview.sites} of {limit(overview.limits.sites)}
              </dd>
            </div>
            <div>
              <dt>Team</dt>
              <dd>
                {overview.team.size} of {limit(overview.limits.teamMembers)}
              </dd>
            </div>
          </dl>
          <p class="muted" data-usage-note>
            Events this month are what the tracking script and server-side collection recorded since the 1st (UTC): pageviews, custom
            events, clicks, errors and form submissions. Not counted: bot and AI-crawler hits, leave-time engagement reports, Web Vitals
            samples, and imported data (raw-hit imports, Google Analytics and Search Console imports, Plausible exports)
            {hasDemo ? ', the demo site’s generated history among them' : ''}.
            {hasDemo ? ' The demo site’s live visitors, one every 20 seconds while the server runs, are counted as any visitor.' : ''}
          </p>
          {overview.notices.map((n) => (
            <p class="notice">{n.message}</p>
          ))}
        </section>
        <section class="card" aria-labelledby="sites">
          <h2 id="sites">Sites</h2>
          {sites.length ? (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Domain</th>
                    <th scope="col">Timezone</th>
                    <th scope="col">
                      <span class="muted">Links</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {sites.map((s) => (
                    <tr>
                      <td>
                        <a href={`/app/sites/${s.id}`}>{s.domain}</a>
                      </td>
                      <td>{s.timezone}</td>
                      <td>
                        <a href={`/app/sites/${s.id}/settings`} aria-label={`Settings of ${s.domain}`}>
                          Settings
                        </a>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : (
            <p class="muted">No sites yet.</p>
          )}
        </section>
        {ADMINS.includes(member.role) ? (
          <form method="post" action={`/app/orgs/${org.id}/sites`} class="card">
            <h2>Add a site</h2>
            <Field id="domain" name="domain" label="Domain" attrs={{ placeholder: 'example.com', required: true }} />
            <Field id="timezone" name="timezone" label="Timezone" kind="select">
              {TIMEZONES.map(([zone, label]) => (
                <option value={zone} selected={zone === 'UTC'}>
                  {label}
                </option>
              ))}
            </Field>
            <button type="submit">Add site</button>
          </form>
        ) : null}
      </Page>,
    )
  })

  web.post('/orgs/:orgId/sites', async (c) => {
    const { org } = adminOf(c, 'add sites')
    const site = await createSite(services, org.id, await readForm(c, siteCreateSchema))
    return c.redirect(`/app/sites/${site.id}/settings`, 303)
  })

  // ---- API keys: the only place they are created
  const keysPage = async ({ org, member }: Membership, address: string, created?: { key: string; name: string; scope: string }) => {
    const [keys, sites] = await Promise.all([
      listApiKeys(services.repositories, org.id, member),
      sitesOfKey(services.repositories, { orgId: org.id, siteId: null }),
    ])
    const domains = new Map<string, string>(sites.map((s: Site) => [s.id, s.domain]))
    return (
      <Page title={`${org.name} API keys`} email={address}>
        <OrgNav orgId={org.id} name={org.name} current="keys" />
        {created ? (
          <section class="card created" aria-labelledby="new-key">
            <h2 id="new-key">Your new key "{created.name}"</h2>
            <p>Copy it now: it is shown only this once.</p>
            <pre id="secret" class="code">
              {created.key}
            </pre>
            <button type="button" data-copy="secret">
              Copy key
            </button>
          </section>
        ) : null}
        <section class="card" aria-labelledby="keys">
          <h1 id="keys">API keys</h1>
          {ADMINS.includes(member.role) ? null : <p class="muted">The keys you made. Owners and admins see every key.</p>}
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Prefix</th>
                  <th scope="col">Scope</th>
                  <th scope="col">Site</th>
                  <th scope="col">Made by</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span class="muted">Action</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.map((k) => (
                  <tr>
                    <td>{k.name}</td>
                    <td>
                      <code>{k.prefix}…</code>
                    </td>
                    <td>{k.scope}</td>
                    <td>{k.siteId ? (domains.get(k.siteId) ?? 'deleted site') : 'all sites'}</td>
                    <td>{makerLabel(keyMakerOf(k))}</td>
                    <td>{k.lastUsedAt ? k.lastUsedAt.slice(0, 16).replace('T', ' ') : 'never'}</td>
                    <td>
                      {k.revokedAt ? (
                        <span class="muted">revoked</span>
                      ) : (
                        <form method="post" action={`/app/orgs/${org.id}/keys/${k.id}/revoke`} class="inline">
                          <button type="submit" class="danger small" aria-label={`Revoke ${k.name}`}>
                            Revoke
                          </button>
                        </form>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
        <form method="post" action={`/app/orgs/${org.id}/keys`} class="card">
          <h2>Create a key</h2>
          <Field id="key-name" name="name" label="Name" attrs={{ required: true, maxlength: 100 }} />
          <Field id="key-scope" name="scope" label="Scope" kind="select">
            <option value="read">read</option>
            {ADMINS.includes(member.role) ? <option value="write">write</option> : null}
          </Field>
          <Field id="key-site" name="siteId" label="Site" kind="select">
            <option value="">All sites</option>
            {sites.map((s: Site) => (
              <option value={s.id}>{s.domain}</option>
            ))}
          </Field>
          <button type="submit">Create key</button>
        </form>
        <CopyScript />
      </Page>
    )
  }

  web.get('/orgs/:orgId/keys', async (c) => c.html(await keysPage(c.get('membership'), email(c))))

  web.post('/orgs/:orgId/keys', async (c) => {
    const address = email(c)
    const { org, member } = c.get('membership')
    const input = await readForm(
      c,
      z.object({ name: z.string().min(1).max(100), scope: z.enum(['read', 'write']), siteId: z.uuid().optional() }),
    )
    checkKeyScope(member, input.scope)
    const created = await createApiKey(
      services.repositories,
      { orgId: org.id, ...input, madeBy: { memberId: member.id, email: member.email } },
      services.now(),
    )
    return c.html(await keysPage(c.get('membership'), address, { key: created.key, name: input.name, scope: created.scope }), 201)
  })

  web.post('/orgs/:orgId/keys/:keyId/revoke', async (c) => {
    const { org, member } = c.get('membership')
    await revokeApiKey(services.repositories, c.req.param('keyId'), services.now(), org.id, member)
    return c.redirect(`/app/orgs/${org.id}/keys`, 303)
  })

  // ---- the team
  web.get('/orgs/:orgId/team', async (c) => {
    const address = email(c)
    const { org, member: me } = c.get('membership')
    const team = await listTeam(services.repositories, org.id)
    const isAdmin = ADMINS.includes(me.role)
    return c.html(
      <Page title={`${org.name} team`} email={address}>
        <OrgNav orgId={org.id} name={org.name} current="team" />
        <section class="card" aria-labelledby="team">
          <h1 id="team">Team</h1>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Member</th>
                  <th scope="col">Role</th>
                  <th scope="col">
                    <span class="muted">Action</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {team.members.map((m) => (
                  <tr>
                    <td>{m.email}</td>
                    <td>
                      {isAdmin && m.role !== 'owner' ? (
                        <form method="post" action={`/app/orgs/${org.id}/team/${m.id}/role`} class="row">
                          <select name="role" aria-label={`Role of ${m.email}`}>
                            {MEMBER_ROLES.map((r) => (
                              <option value={r} selected={r === m.role}>
                                {r}
                              </option>
                            ))}
                          </select>
                          <button type="submit" class="secondary small">
                            Save
                          </button>
                        </form>
                      ) : (
                        m.role
                      )}
                    </td>
                    <td>
                      {isAdmin && m.role !== 'owner' ? (
                        <form method="post" action={`/app/orgs/${org.id}/team/${m.id}/remove`} class="inline">
                          <button type="submit" class="danger small" aria-label={`Remove ${m.email}`}>
                            Remove
                          </button>
                        </form>
                      ) : null}
                    </td>
                  </tr>
                ))}
                {team.invitations.map((i) => (
                  <tr>
                    <td>{i.email}</td>
                    <td>invited as {i.role}</td>
                    <td>
                      {isAdmin ? (
                        <form method="post" action={`/app/orgs/${org.id}/team/invitations/${i.id}/cancel`} class="inline">
                          <button type="submit" class="danger small" aria-label={`Cancel the invitation of ${i.email}`}>
                            Cancel
                          </button>
                        </form>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
        {isAdmin ? (
          <form method="post" action={`/app/orgs/${org.id}/team/invite`} class="card">
            <h2>Invite someone</h2>
            <Field id="invite-email" name="email" label="E-mail address" attrs={{ type: 'email', required: true }} />
            <Field id="invite-role" name="role" label="Role" kind="select">
              <option value="member">member</option>
              <option value="admin">admin</option>
            </Field>
            <button type="submit">Invite</button>
          </form>
        ) : null}
        {me.role === 'owner' && team.members.length > 1 ? (
          <form method="post" action={`/app/orgs/${org.id}/team/transfer`} class="card danger-zone">
            <h2>Transfer ownership</h2>
            <p>The new owner gets every right over the organization; you stay on as an admin.</p>
            <Field id="transfer-to" name="memberId" label="New owner" kind="select">
              {team.members
                .filter((m) => m.role !== 'owner')
                .map((m) => (
                  <option value={m.id}>{m.email}</option>
                ))}
            </Field>
            <button type="submit" class="danger">
              Transfer ownership
            </button>
          </form>
        ) : null}
      </Page>,
    )
  })

  web.post('/orgs/:orgId/team/invite', async (c) => {
    const { org } = adminOf(c, 'invite people')
    const input = await readForm(c, z.object({ email: emailSchema, role: z.enum(MEMBER_ROLES) }))
    // the e-mail links to the configured origin alone; without one (Workers without PUBLIC_URL) it holds no link
    await inviteMember(services, org.id, input, configuredOrigin(services))
    return c.redirect(`/app/orgs/${org.id}/team`, 303)
  })

  web.post('/orgs/:orgId/team/:memberId/role', async (c) => {
    const { org } = adminOf(c, 'change roles')
    const { role } = await readForm(c, z.object({ role: z.enum(MEMBER_ROLES) }))
    await setMemberRole(services.repositories, org.id, c.req.param('memberId'), role)
    return c.redirect(`/app/orgs/${org.id}/team`, 303)
  })

  web.post('/orgs/:orgId/team/:memberId/remove', async (c) => {
    const { org } = adminOf(c, 'remove members')
    await removeMember(services.repositories, org.id, c.req.param('memberId'), services.now())
    return c.redirect(`/app/orgs/${org.id}/team`, 303)
  })

  web.post('/orgs/:orgId/team/invitations/:id/cancel', async (c) => {
    const { org } = adminOf(c, 'cancel invitations')
    await cancelInvitation(services.repositories, org.id, c.req.param('id'))
    return c.redirect(`/app/orgs/${org.id}/team`, 303)
  })

  web.post('/orgs/:orgId/team/transfer', async (c) => {
    const { org, member } = c.get('membership')
    const { memberId } = await readForm(c, z.object({ memberId: z.uuid() }))
    await transferOwnership(services.repositories, org.id, member, memberId)
    return c.redirect(`/app/orgs/${org.id}/team`, 303)
  })

  siteSettingsRoutes(web, services)
}

const makerLabel = (maker: ReturnType<typeof keyMakerOf>) =>
  maker === 'admin_cli' ? 'admin CLI' : maker === 'unknown' ? 'unknown' : maker.email

/** The organization's name, its sections, and the switch to the person's other organizations. */
function OrgNav({
  orgId,
  name,
  current,
  others,
}: {
  orgId: string
  name: string
  current: string
  others?: { id: string; name: string }[]
}) {
  const link = (section: string, label: string, href: string) => (
    <a href={href} aria-current={current === section ? 'page' : undefined}>
      {label}
    </a>
  )
  return (
    <div class="org-nav">
      <h1>{name}</h1>
      <nav aria-label="Organization">
        {link('overview', 'Overview', `/app/orgs/${orgId}`)}
        {link('keys', 'API keys', `/app/orgs/${orgId}/keys`)}
        {link('team', 'Team', `/app/orgs/${orgId}/team`)}
        {others && others.length > 1 ? <a href="/app">Switch organization</a> : null}
      </nav>
    </div>
  )
}
