import type { Member } from '../../lib/accounts/team'
import type { Site } from '../../lib/sites/sites'

/** Who looks, and where the pages of this dashboard are: a member under /app, or anyone with the shared view under /share. */
export interface DashboardView {
  site: Site
  /** `/app/sites/{id}` or `/share/{id}`. */
  base: string
  /** The signed-in member and their address; none on a shared view. */
  member?: Member
  email?: string
  shared: boolean
  /** Whether the section pages are reachable from here. */
  sections: boolean
}
