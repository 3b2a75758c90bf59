import { z } from 'zod'
import { ApiError } from '../../lib/core/errors'
import { cancelInvitation, inviteMember, listTeam, removeMember, setMemberRole } from '../../lib/accounts/members'
import { MEMBER_ROLES, emailSchema, invitationSchema, memberSchema } from '../../lib/accounts/team'
import { configuredOrigin } from '../../lib/network/origin'
import { defineEndpoint } from '../endpoint'
import { uuidParam } from '../params'

const roleSchema = z.enum(MEMBER_ROLES, { message: 'must be admin or member (the owner is set in the browser)' })

export const memberEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/org/members',
    scope: 'read',
    orgWide: true,
    tool: 'list_members',
    summary: 'The team: members with their roles (owner, admin, member) and pending invitations.',
    description:
      'Members come owner first, then admins and members by address; invitations oldest first. Invitations stay pending until accepted or cancelled.',
    response: z.object({ members: z.array(memberSchema), invitations: z.array(invitationSchema) }),
    async handler({ services, key }) {
      return listTeam(services.repositories, key.orgId)
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/org/members',
    scope: 'write',
    orgWide: true,
    tool: 'invite_member',
    summary: 'Invites an address to the team as admin or member, and e-mails the invitation.',
    description:
      'An address already a member or invited is 409. emailed is false when no e-mail could be sent (no mailer in this deployment, or the mail server refused): the invitation stands and can be cancelled with DELETE ?invitation_id=.',
    body: z.strictObject({ email: emailSchema, role: roleSchema }),
    status: 201,
    response: invitationSchema.extend({ emailed: z.boolean().describe('Whether the invitation e-mail was sent') }),
    async handler({ services, key }, { body }) {
      // the e-mail's link starts with the configured origin only, never the request's Host
      return inviteMember(services, key.orgId, body, configuredOrigin(services))
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/org/members',
    scope: 'write',
    orgWide: true,
    tool: 'update_member_role',
    summary: "Sets a member's role to admin or member. The owner's role is changed in the browser (403 here).",
    body: z.strictObject({ member_id: uuidParam.describe('The member id from list_members'), role: roleSchema }),
    response: memberSchema,
    async handler({ services, key }, { body }) {
      return setMemberRole(services.repositories, key.orgId, body.member_id, body.role)
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/org/members',
    scope: 'write',
    orgWide: true,
    tool: 'remove_member',
    summary:
      'Removes a member (member_id), revoking the API keys they made, or cancels a pending invitation (invitation_id). The owner cannot be removed.',
    params: z.object({
      member_id: uuidParam.optional().describe('The member to remove'),
      invitation_id: uuidParam.optional().describe('The invitation to cancel'),
    }),
    response: z.object({
      deleted: z.literal(true),
      kind: z.enum(['member', 'invitation']),
      id: z.uuid(),
      keysRevoked: z.number().int().describe('The API keys the removed member had made, revoked with them (0 for an invitation)'),
    }),
    async handler({ services, key }, { params }) {
      if (!params.member_id === !params.invitation_id) throw new ApiError(400, 'member_id: give exactly one of member_id and invitation_id')
      if (params.member_id) return removeMember(services.repositories, key.orgId, params.member_id, services.now())
      return { ...(await cancelInvitation(services.repositories, key.orgId, params.invitation_id!)), keysRevoked: 0 }
    },
  }),
]
