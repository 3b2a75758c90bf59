import { z } from 'zod'
import { attachCustomDomain, customDomainState, customDomainStateSchema, detachCustomDomain } from '../../lib/sites/custom-domain'
import { domainSchema, siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'

const stateOnly = async (state: ReturnType<typeof customDomainState>) => {
  const { site: _site, ...answer } = await state
  return answer
}

export const customDomainEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}/custom-domain',
    scope: 'read',
    tool: 'get_custom_domain',
    summary: "The site's custom tracking domain: the domain, the CNAME target to set, and its DNS status, checked now.",
    description:
      'The snippet loads the script from the custom domain only while it is verified (a CNAME to cnameTarget, or the same addresses where the DNS host flattens CNAMEs); trackingDomain and snippet show what it uses now.',
    params: z.object({ site_id: siteRefSchema }),
    response: customDomainStateSchema,
    async handler({ services, site, baseUrl }, { params }) {
      return stateOnly(customDomainState(services, await site(params.site_id), baseUrl))
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/sites/{site_id}/custom-domain',
    scope: 'write',
    tool: 'set_custom_domain',
    summary: 'Attaches a custom tracking domain, a subdomain of the site (stats.example.com); replaces any other.',
    description:
      'Answers the DNS status at once: pending until the CNAME record points at cnameTarget. The snippet keeps the service host until then.',
    params: z.object({ site_id: siteRefSchema }),
    body: z.strictObject({ domain: domainSchema.describe('A subdomain of the site domain') }),
    response: customDomainStateSchema,
    async handler({ services, site, baseUrl }, { params, body }) {
      return stateOnly(attachCustomDomain(services, await site(params.site_id), body.domain, baseUrl))
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/sites/{site_id}/custom-domain',
    scope: 'write',
    tool: 'remove_custom_domain',
    summary: 'Detaches the custom tracking domain; the snippet goes back to the service host. Answers status none.',
    params: z.object({ site_id: siteRefSchema }),
    response: customDomainStateSchema,
    async handler({ services, site, baseUrl }, { params }) {
      return stateOnly(detachCustomDomain(services, await site(params.site_id), baseUrl))
    },
  }),
]
