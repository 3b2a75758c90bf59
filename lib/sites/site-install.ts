import type { Site } from './sites'

/** A site's install state as the reads answer it: the stored one, and whether events arrived in the last 24 hours. */
export type SiteInstall = Site['install'] & { recording: boolean }

const RECORDING_WINDOW_MS = 24 * 3600_000

/**
 * The install state of a site from its first and last event (undefined before any), as every
 * read answers it (a site, the listing, the site facts, the install check): taken from the events
 * themselves, not from the stored copy the collector never updates, so no two reads disagree.
 */
export function installOf(site: Site, edges: { first: string; last: string } | undefined, now: Date): SiteInstall {
  return {
    // the stored flag follows install checks that found the tag (checkInstallNow)
    installed: edges !== undefined || site.install.installed,
    recording: edges !== undefined && Date.parse(edges.last) >= now.getTime() - RECORDING_WINDOW_MS,
    firstEventAt: edges?.first ?? null,
    lastEventAt: edges?.last ?? null,
    checkedAt: site.install.checkedAt,
  }
}
