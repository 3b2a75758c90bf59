import { describe, expect, it } from 'vitest'
import { createOrg } from '../../lib/accounts/admin'
import { acceptInvitation, inviteMember, listTeam, membershipIn, transferOwnership } from '../../lib/accounts/members'
import { ApiError } from '../../lib/core/errors'
import { REDIS_URL, type KvKind, testServices } from '../helpers'

/**
 * Two transfers of ownership at once (issue 45, item 10): on either store exactly one succeeds,
 * the other is a 409, and the organization ends with one owner.
 */

for (const kv of ['embedded', 'redis'] as KvKind[]) {
  describe.skipIf(kv === 'redis' && !REDIS_URL)(`ownership transfers at once, on the ${kv} store`, () => {
    it('lets one of two concurrent transfers through, and leaves one owner', async () => {
      const services = await testServices({ kv })
      const now = services.now()
      const org = await createOrg(services.repositories, 'Two heirs', now, 'founder@example.com')
      const heirs = []
      for (const address of ['heir-1@example.com', 'heir-2@example.com']) {
        const invitation = await inviteMember(services, org.id, { email: address, role: 'admin' })
        heirs.push(await acceptInvitation(services.repositories, invitation.id, now))
      }
      const { member: owner } = await membershipIn(services.repositories, org.id, 'founder@example.com')
      const outcomes = await Promise.allSettled(heirs.map((heir) => transferOwnership(services.repositories, org.id, owner, heir.id)))
      const done = outcomes.filter((o) => o.status === 'fulfilled')
      const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []))
      expect(done).toHaveLength(1)
      expect(refused).toHaveLength(1)
      expect(refused[0]).toBeInstanceOf(ApiError)
      expect(refused[0]).toMatchObject({ status: 409 })
      const { members } = await listTeam(services.repositories, org.id)
      const owners = members.filter((m) => m.role === 'owner')
      expect(owners).toHaveLength(1)
      expect(owners[0].id).toBe((done[0] as PromiseFulfilledResult<{ id: string }>).value.id)
      expect(members.find((m) => m.email === 'founder@example.com')!.role).toBe('admin')
      // the owner as read before the first transfer is no owner any more: a transfer from it changes nothing
      const other = heirs.find((h) => h.id !== owners[0].id)!
      await expect(transferOwnership(services.repositories, org.id, owner, other.id)).rejects.toMatchObject({ status: 409 })
      expect((await listTeam(services.repositories, org.id)).members.filter((m) => m.role === 'owner')).toHaveLength(1)
    })
  })
}
