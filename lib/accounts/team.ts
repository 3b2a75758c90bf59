import { z } from 'zod'

/** The records of an organization's team, as stored and as the API shows them (the verbs are in members.ts). */

export const MEMBER_ROLES = ['admin', 'member'] as const
export type MemberRole = (typeof MEMBER_ROLES)[number]
export type Role = 'owner' | MemberRole

export interface Member {
  id: string
  email: string
  role: Role
  joinedAt: string
}

export interface Invitation {
  id: string
  email: string
  role: MemberRole
  invitedAt: string
}

export const memberSchema = z.object({ id: z.uuid(), email: z.string(), role: z.enum(['owner', ...MEMBER_ROLES]), joinedAt: z.string() })
export const invitationSchema = z.object({ id: z.uuid(), email: z.string(), role: z.enum(MEMBER_ROLES), invitedAt: z.string() })

export const emailSchema = z
  .email({ message: 'must be an e-mail address' })
  .max(254)
  .transform((address) => address.toLowerCase())
