import type { Redis } from '@upstash/redis'
import { asRecord } from '../storage/kv/records'
import type { Org } from './org-record'

const orgsKey = {
  /** Every organization's id. */
  all: 'orgs',
  org: (id: string) => `org:${id}`,
}

/** Organizations: one JSON record each, and the set of all their ids. */
export class OrgsRepository {
  constructor(private readonly kv: Redis) {}

  async create(org: Org) {
    await this.kv.multi().set(orgsKey.org(org.id), JSON.stringify(org)).sadd(orgsKey.all, org.id).exec()
  }

  async get(id: string) {
    return asRecord<Org>(await this.kv.get(orgsKey.org(id)))
  }

  count() {
    return this.kv.scard(orgsKey.all)
  }

  async list(): Promise<Org[]> {
    const ids = await this.kv.smembers(orgsKey.all)
    if (!ids.length) return []
    return (await this.kv.mget<unknown[]>(...ids.map(orgsKey.org))).map((o) => asRecord<Org>(o)).filter((o): o is Org => o !== null)
  }
}
