import type { Redis } from '@upstash/redis'
import { asRecord, asString } from '../storage/kv/records'
import type { Invitation, Member } from './team'

const teamKey = {
  members: (orgId: string) => `org:${orgId}:members`,
  invitations: (orgId: string) => `org:${orgId}:invitations`,
  /** Each address of the team once: `member:<id>` or `invitation:<id>`. */
  emails: (orgId: string) => `org:${orgId}:team-emails`,
  invitationOrg: (invitationId: string) => `invitation:${invitationId}`,
  /** An accepted invitation's member, so accepting it again is answered as such and not as unknown. */
  acceptedInvitation: (invitationId: string) => `invitation:${invitationId}:accepted`,
  /** The open invitations of an address, in every organization: one e-mail while any is open. */
  openInvitations: (email: string) => `invitations-of:${email}`,
}

/** An organization's members and open invitations; an address is on the team at most once. */
export class TeamRepository {
  private transferScript?: ReturnType<Redis['createScript']>

  constructor(private readonly kv: Redis) {}

  async list(orgId: string): Promise<{ members: Member[]; invitations: Invitation[] }> {
    const [members, invitations] = await this.kv
      .pipeline()
      .hgetall<Record<string, Member>>(teamKey.members(orgId))
      .hgetall<Record<string, Invitation>>(teamKey.invitations(orgId))
      .exec<[Record<string, Member> | null, Record<string, Invitation> | null]>()
    return { members: Object.values(members ?? {}), invitations: Object.values(invitations ?? {}) }
  }

  /** Adds a member unless the address is already on the team; false then. */
  async addMember(orgId: string, member: Member): Promise<boolean> {
    if (!(await this.kv.hsetnx(teamKey.emails(orgId), member.email, `member:${member.id}`))) return false
    await this.saveMember(orgId, member)
    return true
  }

  async saveMember(orgId: string, member: Member) {
    await this.kv.hset(teamKey.members(orgId), { [member.id]: JSON.stringify(member) })
  }

  async removeMember(orgId: string, member: Member) {
    await this.kv.multi().hdel(teamKey.members(orgId), member.id).hdel(teamKey.emails(orgId), member.email).exec()
  }

  /**
   * Records an invitation unless the address is already on the team (null then); answers how many
   * other invitations of the address were open, in any organization, as it was recorded.
   */
  async createInvitation(orgId: string, invitation: Invitation): Promise<{ othersOpen: number } | null> {
    if (!(await this.kv.hsetnx(teamKey.emails(orgId), invitation.email, `invitation:${invitation.id}`))) return null
    const [, , , open] = await this.kv
      .multi()
      .hset(teamKey.invitations(orgId), { [invitation.id]: JSON.stringify(invitation) })
      .set(teamKey.invitationOrg(invitation.id), orgId)
      .sadd(teamKey.openInvitations(invitation.email), invitation.id)
      .scard(teamKey.openInvitations(invitation.email))
      .exec<[unknown, unknown, unknown, number]>()
    return { othersOpen: Number(open) - 1 }
  }

  /** Whether the address has an invitation open, in any organization. */
  async hasOpenInvitation(email: string): Promise<boolean> {
    return (await this.kv.scard(teamKey.openInvitations(email))) > 0
  }

  async invitationOrg(invitationId: string): Promise<string | null> {
    return asString(await this.kv.get(teamKey.invitationOrg(invitationId)))
  }

  /** Who accepted the invitation and when; null for one never accepted. */
  async acceptedInvitation(invitationId: string) {
    return asRecord<{ orgId: string; memberId: string; email: string; at: string }>(
      await this.kv.get(teamKey.acceptedInvitation(invitationId)),
    )
  }

  async removeInvitation(orgId: string, invitation: Invitation) {
    await this.kv
      .multi()
      .hdel(teamKey.invitations(orgId), invitation.id)
      .hdel(teamKey.emails(orgId), invitation.email)
      .del(teamKey.invitationOrg(invitation.id))
      .srem(teamKey.openInvitations(invitation.email), invitation.id)
      .exec()
  }

  async acceptInvitation(orgId: string, invitation: Invitation, member: Member) {
    await this.kv
      .multi()
      .hdel(teamKey.invitations(orgId), invitation.id)
      .del(teamKey.invitationOrg(invitation.id))
      .srem(teamKey.openInvitations(invitation.email), invitation.id)
      .set(
        teamKey.acceptedInvitation(invitation.id),
        JSON.stringify({ orgId, memberId: member.id, email: member.email, at: member.joinedAt }),
      )
      .hset(teamKey.members(orgId), { [member.id]: JSON.stringify(member) })
      .hset(teamKey.emails(orgId), { [member.email]: `member:${member.id}` })
      .exec()
  }

  /** The member record of `email` in each of the organizations where it is one. */
  async membershipsOf(orgIds: string[], email: string): Promise<{ orgId: string; member: Member }[]> {
    const found = await this.entriesOf<Member>(orgIds, email, 'member', teamKey.members)
    return found.map(({ orgId, record }) => ({ orgId, member: record }))
  }

  /** The open invitations of `email` among those organizations. */
  async invitationsOf(orgIds: string[], email: string): Promise<{ orgId: string; invitation: Invitation }[]> {
    const found = await this.entriesOf<Invitation>(orgIds, email, 'invitation', teamKey.invitations)
    return found.map(({ orgId, record }) => ({ orgId, invitation: record }))
  }

  /**
   * The records `email` stands for in each organization: its entry in the organization's e-mail
   * index names a member or an invitation (`<kind>:<id>`), read from the hash `hashOf` names.
   * Two round trips whatever the number of organizations.
   */
  private async entriesOf<T>(
    orgIds: string[],
    email: string,
    kind: 'member' | 'invitation',
    hashOf: (orgId: string) => string,
  ): Promise<{ orgId: string; record: T }[]> {
    if (!orgIds.length) return []
    const pipeline = this.kv.pipeline()
    for (const orgId of orgIds) pipeline.hget(teamKey.emails(orgId), email)
    const entries = await pipeline.exec<(string | null)[]>()
    const prefix = `${kind}:`
    const found = orgIds.flatMap((orgId, i) => {
      const entry = asString(entries[i])
      return entry?.startsWith(prefix) ? [{ orgId, id: entry.slice(prefix.length) }] : []
    })
    if (!found.length) return []
    const reads = this.kv.pipeline()
    for (const { orgId, id } of found) reads.hget(hashOf(orgId), id)
    const records = await reads.exec<unknown[]>()
    return found.flatMap(({ orgId }, i) => {
      const record = asRecord<T>(records[i])
      return record ? [{ orgId, record }] : []
    })
  }

  /**
   * Makes `to` the owner and the owner `from` an admin, only while both records are still as read:
   * of two transfers at once, the second finds the owner an admin already and changes nothing
   * (false), so the organization never has two owners.
   */
  async transferOwnership(orgId: string, from: Member, to: Member): Promise<boolean> {
    this.transferScript ??= this.kv.createScript(TRANSFER)
    const done = await this.transferScript.exec(
      [teamKey.members(orgId)],
      [
        from.id,
        JSON.stringify(from),
        to.id,
        JSON.stringify(to),
        JSON.stringify({ ...from, role: 'admin' }),
        JSON.stringify({ ...to, role: 'owner' }),
      ],
    )
    return Number(done) === 1
  }
}

/** Compare-and-set of two members' records in one step (records are stored as JSON.stringify of the member, and read back unchanged). */
const TRANSFER = `if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] or redis.call('HGET', KEYS[1], ARGV[3]) ~= ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[5], ARGV[3], ARGV[6])
return 1`
