import { type CruxDeps, cruxFieldData } from '../integrations/crux'
import { collectorRead } from '../reports/query/behaviour'
import type { ReportDeps } from '../reports/query/reports'
import { type VitalsParams, vitals } from '../reports/query/vitals'
import type { Site } from '../sites/sites'

/**
 * GET /vitals: the read, and with `crux=1` the CrUX field data of the site's origin beside it,
 * asked at the same time. It does not depend on the tracker, so a site that reads only ga4 gets it
 * too; CrUX failing or slow changes only `crux`, never the numbers.
 */
async function vitalsWithFieldDataRead(deps: ReportDeps & CruxDeps, site: Site, params: VitalsParams) {
  if (params.crux !== '1') return vitals(deps, site, params)
  const [read, crux] = await Promise.all([vitals(deps, site, params), cruxFieldData(deps, site, params.form_factor)])
  return { ...read, crux }
}

export const vitalsWithFieldData = (deps: ReportDeps & CruxDeps, site: Site, params: VitalsParams) =>
  collectorRead(site, params, () => vitalsWithFieldDataRead(deps, site, params))
