import type { Redis } from '@upstash/redis'
import { asRecord } from '../storage/kv/records'
import type { InstallCheck } from './install-check-result'

/** A site's custom tracking domain, as attached (lib/sites/custom-domain.ts). */
export interface CustomDomainRecord {
  domain: string
  addedAt: string
  verifiedAt: string | null
}

const checksKey = {
  installCheck: (siteId: string) => `site:${siteId}:install-check`,
  customDomain: (siteId: string) => `site:${siteId}:custom-domain`,
}

/** What was last found about a site's setup: its install check and its custom domain. */
export class SiteChecksRepository {
  constructor(private readonly kv: Redis) {}

  async installCheck(siteId: string): Promise<InstallCheck | null> {
    return asRecord<InstallCheck>(await this.kv.get(checksKey.installCheck(siteId)))
  }

  async saveInstallCheck(siteId: string, check: InstallCheck) {
    await this.kv.set(checksKey.installCheck(siteId), JSON.stringify(check))
  }

  async customDomain(siteId: string): Promise<CustomDomainRecord | null> {
    return asRecord<CustomDomainRecord>(await this.kv.get(checksKey.customDomain(siteId)))
  }

  async saveCustomDomain(siteId: string, record: CustomDomainRecord) {
    await this.kv.set(checksKey.customDomain(siteId), JSON.stringify(record))
  }

  async deleteCustomDomain(siteId: string) {
    await this.kv.del(checksKey.customDomain(siteId))
  }

  /** Drops what a deleted site's install checks and custom domain left behind. */
  async deleteAll(siteId: string) {
    await this.kv.del(checksKey.installCheck(siteId), checksKey.customDomain(siteId))
  }
}
