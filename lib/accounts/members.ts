import type { DomainServices, DomainRepositories } from '../sites/domain-services'
import { ApiError } from '../core/errors'
import type { ApiKeyRecord } from './keys'
import type { Invitation, Member, MemberRole, Role } from './team'
import { checkLimit, planFor } from './plans'

/**
 * The team of an organization: members (one owner, admins, members) and pending invitations.
 * An address is on the team at most once, as a member or as an invitation. The owner is the
 * organization's creator; their role is changed, and they are removed, only in the browser.
 */

export async function listTeam(repositories: Pick<DomainRepositories, 'team'>, orgId: string) {
  const { members, invitations } = await repositories.team.list(orgId)
  const roleOrder: Record<Role, number> = { owner: 0, admin: 1, member: 2 }
  return {
    members: members.sort((a, b) => roleOrder[a.role] - roleOrder[b.role] || a.email.localeCompare(b.email)),
    invitations: invitations.sort((a, b) => a.invitedAt.localeCompare(b.invitedAt) || a.email.localeCompare(b.email)),
  }
}

const alreadyOnTeam = (email: string) => new ApiError(409, `email: ${email} is already a member or invited`)

/** Makes `email` the organization's owner (its creator). */
export async function addOwner(repositories: Pick<DomainRepositories, 'team'>, orgId: string, email: string, now: Date): Promise<Member> {
  const owner: Member = { id: crypto.randomUUID(), email, role: 'owner', joinedAt: now.toISOString() }
  if (!(await repositories.team.addMember(orgId, owner))) throw alreadyOnTeam(email)
  return owner
}

/** A name stored before names were kept to one line, as one line. */
const oneLine = (text: string) => text.replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, ' ').trim()

/** 429 naming the budget an invitation would exceed, with when it renews. */
async function withinBudget(
  services: Pick<DomainServices, 'limiter'>,
  limitClass: 'invitationsOrg' | 'invitationsAddress',
  who: string,
  what: string,
) {
  const result = await services.limiter.limit(limitClass, who)
  if (result.success) return
  const seconds = Math.max(1, Math.ceil((result.retryAfterMs ?? 60_000) / 1000))
  throw new ApiError(429, `invitations: at most ${result.limit} a day that ${what}; try again in ${seconds} s`, {
    'Retry-After': String(seconds),
  })
}

/**
 * Invites an address and e-mails the invitation; the invitation stands even when no e-mail could
 * be sent. 403 when the plan's team is full, open invitations counted; 429 past the daily
 * invitations of the organization or of the address. An address with an invitation open already
 * (in any organization) is not e-mailed again: it sees every open invitation when it signs in.
 */
export async function inviteMember(
  services: Pick<DomainServices, 'repositories' | 'mailer' | 'now' | 'plan' | 'limiter'>,
  orgId: string,
  input: { email: string; role: MemberRole },
  /** The web application's origin: the e-mail links to its account area, where the invitation is accepted. */
  baseUrl?: string,
) {
  const [org, team] = await Promise.all([services.repositories.orgs.get(orgId), services.repositories.team.list(orgId)])
  if (!org) throw new ApiError(404, 'organization not found')
  // the owner is on the team even where it was never recorded (organizations made before owners were)
  checkLimit(planFor(org, services.plan), 'teamMembers', Math.max(1, team.members.length) + team.invitations.length)
  // an address on the team is a 409 that spends no budget (createInvitation decides a race)
  if ([...team.members, ...team.invitations].some((m) => m.email === input.email)) throw alreadyOnTeam(input.email)
  // an address's budget is of the mails it is sent: spent only when this invitation would mail it
  const mails = !!services.mailer && !(await services.repositories.team.hasOpenInvitation(input.email))
  if (mails) await withinBudget(services, 'invitationsAddress', input.email, `${input.email} is sent, by every organization together`)
  await withinBudget(services, 'invitationsOrg', org.id, 'this organization sends')
  const invitation: Invitation = { id: crypto.randomUUID(), email: input.email, role: input.role, invitedAt: services.now().toISOString() }
  const recorded = await services.repositories.team.createInvitation(org.id, invitation)
  if (!recorded) throw alreadyOnTeam(input.email)
  let emailed = false
  if (services.mailer && mails && recorded.othersOpen === 0) {
    try {
      await services.mailer.send({
        to: [invitation.email],
        subject: `You are invited to join ${oneLine(org.name)}`,
        text: [
          `You have been invited to join ${oneLine(org.name)} as ${invitation.role === 'admin' ? 'an admin' : 'a member'}.`,
          '',
          `Invitation id: ${invitation.id}`,
          baseUrl ? `Sign in with this address to accept it: ${baseUrl.replace(/\/$/, '')}/app` : 'Sign in with this address to accept it.',
        ].join('\n'),
      })
      emailed = true
    } catch (err) {
      console.error(`invitation ${invitation.id}: the e-mail was not sent: ${(err as Error).message}`)
    }
  }
  return { ...invitation, emailed }
}

async function findMember(repositories: Pick<DomainRepositories, 'team'>, orgId: string, memberId: string): Promise<Member> {
  const member = (await repositories.team.list(orgId)).members.find((m) => m.id === memberId)
  if (!member) throw new ApiError(404, 'member not found')
  return member
}

export async function setMemberRole(
  repositories: Pick<DomainRepositories, 'team'>,
  orgId: string,
  memberId: string,
  role: MemberRole,
): Promise<Member> {
  const member = await findMember(repositories, orgId, memberId)
  if (member.role === 'owner') throw new ApiError(403, "the owner's role is changed in the browser (account settings), not through the API")
  const next = { ...member, role }
  await repositories.team.saveMember(orgId, next)
  return next
}

/** Removes a member and revokes the keys they made: they hold those secrets, and would keep using them. */
export async function removeMember(repositories: Pick<DomainRepositories, 'team' | 'keys'>, orgId: string, memberId: string, now: Date) {
  const member = await findMember(repositories, orgId, memberId)
  if (member.role === 'owner')
    throw new ApiError(403, 'the owner cannot be removed; ownership is transferred in the browser (account settings)')
  await repositories.team.removeMember(orgId, member)
  const theirs = (await repositories.keys.list(orgId)).filter((k) => !k.revokedAt && k.madeBy?.memberId === member.id)
  await Promise.all(theirs.map((k) => repositories.keys.revoke(k, now.toISOString())))
  return { deleted: true as const, kind: 'member' as const, id: member.id, keysRevoked: theirs.length }
}

export async function cancelInvitation(repositories: Pick<DomainRepositories, 'team'>, orgId: string, invitationId: string) {
  const invitation = (await repositories.team.list(orgId)).invitations.find((i) => i.id === invitationId)
  if (!invitation) throw new ApiError(404, 'invitation not found')
  await repositories.team.removeInvitation(orgId, invitation)
  return { deleted: true as const, kind: 'invitation' as const, id: invitation.id }
}

/** Turns a pending invitation into a member with its role (the admin CLI, standing in for the browser sign-in). */
export async function acceptInvitation(
  repositories: Pick<DomainRepositories, 'team'>,
  invitationId: string,
  now: Date,
): Promise<Member & { orgId: string }> {
  const orgId = await repositories.team.invitationOrg(invitationId)
  const invitation = orgId ? (await repositories.team.list(orgId)).invitations.find((i) => i.id === invitationId) : undefined
  if (!orgId || !invitation) {
    const accepted = await repositories.team.acceptedInvitation(invitationId)
    if (accepted) throw new ApiError(409, `invitation ${invitationId} was already accepted (by ${accepted.email}, at ${accepted.at})`)
    throw new ApiError(404, `invitation ${invitationId} not found`)
  }
  const member: Member = { id: crypto.randomUUID(), email: invitation.email, role: invitation.role, joinedAt: now.toISOString() }
  await repositories.team.acceptInvitation(orgId, invitation, member)
  return { ...member, orgId }
}

/** The organizations `email` is a member of, with its role in each, by name. */
export async function organizationsOf(repositories: Pick<DomainRepositories, 'team' | 'orgs'>, email: string) {
  const orgs = await repositories.orgs.list()
  const memberships = await repositories.team.membershipsOf(
    orgs.map((o) => o.id),
    email,
  )
  const byId = new Map(orgs.map((o) => [o.id, o]))
  return memberships
    .map(({ orgId, member }) => ({ org: byId.get(orgId)!, member }))
    .sort((a, b) => a.org.name.localeCompare(b.org.name) || a.org.id.localeCompare(b.org.id))
}

/** `email`'s place in an organization; 404 (as for one that does not exist) when it is not a member. */
export async function membershipIn(repositories: Pick<DomainRepositories, 'team' | 'orgs'>, orgId: string, email: string) {
  const org = await repositories.orgs.get(orgId)
  const [membership] = org ? await repositories.team.membershipsOf([org.id], email) : []
  if (!org || !membership) throw new ApiError(404, 'organization not found')
  return { org, member: membership.member }
}

/** 403 unless the member's role is one of `roles`; `what` names the refused action. */
export function requireRole(member: Pick<Member, 'role'>, roles: Role[], what: string) {
  if (!roles.includes(member.role)) throw new ApiError(403, `only ${roles.join(' or ')}s can ${what}`)
}

const ADMIN_ROLES: Role[] = ['owner', 'admin']

/** Whom a key acts for beside its scope: a member of the team, or (null) the organization itself. */
export type KeyActor = Pick<Member, 'id' | 'email' | 'role'> | null

/**
 * A key's maker as the team holds them now (a role changed since the key was made counts), or
 * null for a key no member made (the admin CLI, keys older than makers), which acts for the
 * organization. A maker no longer on the team has no rights beyond their own keys.
 */
export async function keyActor(
  repositories: Pick<DomainRepositories, 'team'>,
  key: Pick<ApiKeyRecord, 'orgId' | 'madeBy'>,
): Promise<KeyActor> {
  const maker = key.madeBy
  if (!maker) return null
  const { members } = await repositories.team.list(key.orgId)
  return members.find((m) => m.id === maker.memberId) ?? { id: maker.memberId, email: maker.email, role: 'member' }
}

/** Owners, admins and the organization's own keys see and revoke every key; a plain member the keys they made. */
export const managesKey = (actor: KeyActor, key: Pick<ApiKeyRecord, 'madeBy'>) =>
  !actor || ADMIN_ROLES.includes(actor.role) || key.madeBy?.memberId === actor.id

/** Whether a key may connect a site to Google or replace its connection: a write key of an owner or admin, or of the organization. */
export async function keyConnectsGoogle(repositories: Pick<DomainRepositories, 'team'>, key: ApiKeyRecord): Promise<boolean> {
  if (key.scope !== 'write') return false
  const actor = await keyActor(repositories, key)
  return !actor || ADMIN_ROLES.includes(actor.role)
}

/** Members who are not admins create read keys only. */
export function checkKeyScope(member: Pick<Member, 'role'>, scope: 'read' | 'write') {
  if (scope === 'write' && member.role === 'member') throw new ApiError(403, 'members who are not admins cannot create write keys')
}

/** Ownership passes from the owner to another member, who must already be on the team; the old owner stays as an admin. */
export async function transferOwnership(repositories: Pick<DomainRepositories, 'team'>, orgId: string, owner: Member, toMemberId: string) {
  if (owner.role !== 'owner') throw new ApiError(403, 'only the owner can transfer ownership')
  const target = await findMember(repositories, orgId, toMemberId)
  if (target.id === owner.id) throw new ApiError(400, 'member_id: you are already the owner')
  if (!(await repositories.team.transferOwnership(orgId, owner, target)))
    throw new ApiError(409, 'the team changed meanwhile (another transfer, or a role change): reload it and try again')
  return { ...target, role: 'owner' as const }
}

/** The open invitations addressed to `email`, with their organizations. */
export async function invitationsFor(repositories: Pick<DomainRepositories, 'team' | 'orgs'>, email: string) {
  const orgs = await repositories.orgs.list()
  const byId = new Map(orgs.map((o) => [o.id, o]))
  return (
    await repositories.team.invitationsOf(
      orgs.map((o) => o.id),
      email,
    )
  ).map(({ orgId, invitation }) => ({ org: byId.get(orgId)!, invitation }))
}

/** Accepts an invitation signed in as its address: another address's invitation is not found. */
export async function acceptInvitationAs(
  repositories: Pick<DomainRepositories, 'team' | 'orgs'>,
  invitationId: string,
  email: string,
  now: Date,
) {
  const mine = (await invitationsFor(repositories, email)).find((i) => i.invitation.id === invitationId)
  if (!mine) throw new ApiError(404, 'invitation not found')
  return acceptInvitation(repositories, invitationId, now)
}
