import type { Hono } from 'hono'
import type { Services } from '../../lib/runtime/services'
import type { WebEnv } from './session'
import { alertSettingsRoutes } from './settings/alerts'
import { domainSettingsRoutes } from './settings/domain'
import { generalSettingsRoutes } from './settings/general'
import { integrationSettingsRoutes } from './settings/integrations'

/**
 * The site's pages in the account area, a file a tab under settings/: its settings groups as forms
 * (general.tsx), its alerts (alerts.tsx), its custom domain (domain.tsx), its Google connection and
 * its imports (integrations.tsx). Every read and write goes through the API's own endpoint (api.ts),
 * called as the signed-in member: owners and admins write, members read.
 */
export function siteSettingsRoutes(web: Hono<WebEnv>, services: Services) {
  generalSettingsRoutes(web, services)
  alertSettingsRoutes(web, services)
  domainSettingsRoutes(web, services)
  integrationSettingsRoutes(web, services)
}
