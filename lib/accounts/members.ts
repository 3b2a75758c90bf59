import { ApiError } from '../errors'
import type { Services } from '../services'
import type { Org, Store } from '../storage/store'
import type { Invitation, Member, MemberRole, Role } from './team'

/**
 * The team of an organization: members (one owner, admins, members) and pending invitations.
 * An address is on the team at most once, as a member or as an invitation. The owner is the
 * organization's creator; their role is changed, and they are removed, only in the browser.
 */

export async function listTeam(store: Store, orgId: string) {
  const { members, invitations } = await store.listTeam(orgId)
  const roleOrder: Record<Role, number> = { owner: 0, admin: 1, member: 2 }
  return {
    members: members.sort((a, b) => roleOrder[a.role] - roleOrder[b.role] || a.email.localeCompare(b.email)),
    invitations: invitations.sort((a, b) => a.invitedAt.localeCompare(b.invitedAt) || a.email.localeCompare(b.email)),
  }
}

const alreadyOnTeam = (email: string) => new ApiError(409, `email: ${email} is already a member or invited`)

/** Makes `email` the organization's owner (its creator). */
export async function addOwner(store: Store, orgId: string, email: string, now: Date): Promise<Member> {
  const owner: Member = { id: crypto.randomUUID(), email, role: 'owner', joinedAt: now.toISOString() }
  if (!(await store.addMember(orgId, owner))) throw alreadyOnTeam(email)
  return owner
}

/** Invites an address and e-mails the invitation; the invitation stands even when no e-mail could be sent. */
export async function inviteMember(services: Pick<Services, 'store' | 'mailer' | 'now'>, org: Org, input: { email: string; role: MemberRole }) {
  const invitation: Invitation = { id: crypto.randomUUID(), email: input.email, role: input.role, invitedAt: services.now().toISOString() }
  if (!(await services.store.createInvitation(org.id, invitation))) throw alreadyOnTeam(input.email)
  let emailed = false
  if (services.mailer) {
    try {
      await services.mailer.send({
        to: [invitation.email],
        subject: `You are invited to join ${org.name}`,
        text: [
          `You have been invited to join ${org.name} as ${invitation.role === 'admin' ? 'an admin' : 'a member'}.`,
          '',
          `Invitation id: ${invitation.id}`,
          'Sign in with this address to accept it.',
        ].join('\n'),
      })
      emailed = true
    } catch (err) {
      console.error(`invitation ${invitation.id}: the e-mail was not sent: ${(err as Error).message}`)
    }
  }
  return { ...invitation, emailed }
}

async function findMember(store: Store, orgId: string, memberId: string): Promise<Member> {
  const member = (await store.listTeam(orgId)).members.find((m) => m.id === memberId)
  if (!member) throw new ApiError(404, 'member not found')
  return member
}

export async function setMemberRole(store: Store, orgId: string, memberId: string, role: MemberRole): Promise<Member> {
  const member = await findMember(store, orgId, memberId)
  if (member.role === 'owner') throw new ApiError(403, "the owner's role is changed in the browser (account settings), not through the API")
  const next = { ...member, role }
  await store.saveMember(orgId, next)
  return next
}

export async function removeMember(store: Store, orgId: string, memberId: string) {
  const member = await findMember(store, orgId, memberId)
  if (member.role === 'owner') throw new ApiError(403, 'the owner cannot be removed; ownership is transferred in the browser (account settings)')
  await store.removeMember(orgId, member)
  return { deleted: true as const, kind: 'member' as const, id: member.id }
}

export async function cancelInvitation(store: Store, orgId: string, invitationId: string) {
  const invitation = (await store.listTeam(orgId)).invitations.find((i) => i.id === invitationId)
  if (!invitation) throw new ApiError(404, 'invitation not found')
  await store.removeInvitation(orgId, invitation)
  return { deleted: true as const, kind: 'invitation' as const, id: invitation.id }
}

/** Turns a pending invitation into a member with its role (the admin CLI, standing in for the browser sign-in). */
export async function acceptInvitation(store: Store, invitationId: string, now: Date): Promise<Member & { orgId: string }> {
  const orgId = await store.getInvitationOrg(invitationId)
  const invitation = orgId ? (await store.listTeam(orgId)).invitations.find((i) => i.id === invitationId) : undefined
  if (!orgId || !invitation) throw new ApiError(404, `invitation ${invitationId} not found`)
  const member: Member = { id: crypto.randomUUID(), email: invitation.email, role: invitation.role, joinedAt: now.toISOString() }
  await store.acceptInvitation(orgId, invitation, member)
  return { ...member, orgId }
}
