import type { GoogleSession } from '../google/session'

/**
 * The GA4 APIs a connection reads, over REST: the Admin API's account summaries (the properties it
 * can read) and the Data API's reports and realtime reports.
 */

export interface Ga4Property {
  propertyId: string
  displayName: string
  accountId: string
  accountName: string
}

interface AccountSummariesPage {
  accountSummaries?: {
    account?: string
    displayName?: string
    propertySummaries?: { property?: string; displayName?: string; propertyType?: string }[]
  }[]
  nextPageToken?: string
}

const idOf = (resource: string | undefined, kind: string) => (resource?.startsWith(`${kind}/`) ? resource.slice(kind.length + 1) : '')

/** Every GA4 property the connection can read, following `pageToken` to the last page. */
export async function readableProperties(session: GoogleSession, adminUrl: string): Promise<Ga4Property[]> {
  const properties: Ga4Property[] = []
  let pageToken: string | undefined
  for (let page = 0; page < 100; page++) {
    const url = new URL(`${adminUrl}/v1beta/accountSummaries`)
    url.searchParams.set('pageSize', '200')
    if (pageToken) url.searchParams.set('pageToken', pageToken)
    const answer = await session.call<AccountSummariesPage>(url.href, { method: 'GET' }, 'the Google Analytics Admin API')
    for (const account of answer.accountSummaries ?? []) {
      for (const property of account.propertySummaries ?? []) {
        const propertyId = idOf(property.property, 'properties')
        if (!propertyId) continue
        properties.push({
          propertyId,
          displayName: property.displayName ?? propertyId,
          accountId: idOf(account.account, 'accounts'),
          accountName: account.displayName ?? '',
        })
      }
    }
    pageToken = answer.nextPageToken || undefined
    if (!pageToken) break
  }
  return properties
}

export interface ReportRequest {
  dateRanges?: { startDate: string; endDate: string }[]
  minuteRanges?: { startMinutesAgo: number; endMinutesAgo: number }[]
  dimensions?: { name: string }[]
  metrics: { name: string }[]
  limit?: number
  offset?: number
  orderBys?: { dimension?: { dimensionName: string }; desc?: boolean }[]
  returnPropertyQuota?: boolean
}

export interface QuotaStatus {
  consumed?: number
  remaining?: number
}

export interface ReportAnswer {
  dimensionHeaders?: { name: string }[]
  metricHeaders?: { name: string; type?: string }[]
  rows?: { dimensionValues?: { value?: string }[]; metricValues?: { value?: string }[] }[]
  rowCount?: number
  propertyQuota?: { tokensPerDay?: QuotaStatus; tokensPerHour?: QuotaStatus; concurrentRequests?: QuotaStatus }
}

/** One page of a report: POST /v1beta/properties/{id}:runReport. */
export const runReport = (session: GoogleSession, dataUrl: string, propertyId: string, request: ReportRequest) =>
  session.call<ReportAnswer>(
    `${dataUrl}/v1beta/properties/${encodeURIComponent(propertyId)}:runReport`,
    { method: 'POST', body: request },
    'the Google Analytics Data API',
  )

/** A realtime report: POST /v1beta/properties/{id}:runRealtimeReport. */
export const runRealtimeReport = (session: GoogleSession, dataUrl: string, propertyId: string, request: ReportRequest) =>
  session.call<ReportAnswer>(
    `${dataUrl}/v1beta/properties/${encodeURIComponent(propertyId)}:runRealtimeReport`,
    { method: 'POST', body: request },
    'the Google Analytics Data API (realtime)',
  )
