import { z } from 'zod'
import { checkInstallNow, installState, installStateSchema } from '../../lib/operations/install-check'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'

export const installEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}/install',
    scope: 'read',
    tool: 'get_install_status',
    summary:
      'Whether the tracking snippet is installed and recording: first and last event, events in the last 24 hours, and the last homepage check.',
    params: z.object({ site_id: siteRefSchema }),
    response: installStateSchema,
    async handler({ services, site }, { params }) {
      return installState(services, await site(params.site_id))
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/sites/{site_id}/install',
    scope: 'write',
    tool: 'check_install',
    summary:
      "Fetches the site's homepage now, where the crawler reads it, and looks for this site's script tag; answers the install state with the result.",
    description:
      'lastCheck.result: found; unreachable (status is the HTTP status, or null when the page did not answer); script_missing; other_site (a tracking tag with another data-site); blocked_by_csp (the tag is there but the page Content-Security-Policy stops the script or its events). detail says what was seen.',
    params: z.object({ site_id: siteRefSchema }),
    response: installStateSchema,
    async handler({ services, site }, { params }) {
      return checkInstallNow(services, await site(params.site_id))
    },
  }),
]
