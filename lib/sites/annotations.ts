import type { DomainRepositories } from './domain-services'
import { z } from 'zod'
import { ApiError } from '../core/errors'
import type { Site } from './sites'
import { domainSchema, siteRefSchema } from './sites'
import { ANNOTATION_KINDS, type Annotation } from './definition-records'

export const ANNOTATION_LIST_MAX = 500

/** An ISO 8601 instant with its offset (Z or ±hh:mm): a marker's place must not depend on the server's zone. */
export const instantSchema = z.iso.datetime({
  offset: true,
  message: 'must be an ISO 8601 timestamp with an offset, like 2026-11-01T10:00:00Z',
})

const httpUrl = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2000)

export const annotationInputSchema = z
  .strictObject({
    siteId: z.uuid({ message: 'must be a site UUID' }).optional(),
    site_id: siteRefSchema.optional().describe('The site UUID or snippet id, as the reads name it'),
    domain: domainSchema.optional(),
    title: z.string().trim().min(1, 'required').max(200, 'at most 200 characters'),
    at: instantSchema.optional(),
    kind: z.enum(ANNOTATION_KINDS).default('note'),
    body: z.string().trim().max(5000).nullish(),
    url: httpUrl.nullish(),
  })
  .refine((a) => a.siteId !== undefined || a.site_id !== undefined || a.domain !== undefined, {
    message: 'siteId or domain is required',
    path: ['siteId'],
  })
export type AnnotationInput = z.infer<typeof annotationInputSchema>

/** The site an annotation names, by UUID or by domain, as the key may see it. */
export async function annotatedSite(
  repositories: Pick<DomainRepositories, 'sites'>,
  siteFor: (id: string) => Promise<Site>,
  orgId: string,
  input: Pick<AnnotationInput, 'siteId' | 'site_id' | 'domain'>,
): Promise<Site> {
  if (input.siteId && input.site_id && input.siteId !== input.site_id)
    throw new ApiError(400, 'site_id: names another site than siteId; send one of them')
  const ref = input.siteId ?? input.site_id
  if (ref) {
    const site = await siteFor(ref)
    if (input.domain !== undefined && input.domain !== site.domain)
      throw new ApiError(400, `domain: "${input.domain}" is not the domain of site ${ref}`)
    return site
  }
  const byDomain = (await repositories.sites.list(orgId)).find((s) => s.domain === input.domain)
  if (!byDomain) throw new ApiError(404, 'site not found')
  return siteFor(byDomain.id)
}

export async function createAnnotation(
  repositories: Pick<DomainRepositories, 'annotations'>,
  site: Site,
  input: AnnotationInput,
  now: Date,
): Promise<Annotation> {
  const annotation: Annotation = {
    id: crypto.randomUUID(),
    siteId: site.id,
    title: input.title,
    at: new Date(input.at ?? now).toISOString(),
    kind: input.kind,
    body: input.body || null,
    url: input.url ?? null,
    createdAt: now.toISOString(),
  }
  await repositories.annotations.save(annotation)
  return annotation
}

/** The site's annotations placed from `from` to `to` (both included), newest first, at most 500. */
export async function listAnnotations(
  repositories: Pick<DomainRepositories, 'annotations'>,
  site: Site,
  window: { from?: string; to?: string },
): Promise<Annotation[]> {
  const from = window.from ? Date.parse(window.from) : -Infinity
  const to = window.to ? Date.parse(window.to) : Infinity
  if (from > to) throw new ApiError(400, 'from: must not be after to')
  return (await repositories.annotations.list(site.id))
    .filter((a) => Date.parse(a.at) >= from && Date.parse(a.at) <= to)
    .sort((a, b) => b.at.localeCompare(a.at) || b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id))
    .slice(0, ANNOTATION_LIST_MAX)
}

/** Deletes an annotation by id alone; one of a site the key cannot see is the same 404 as none. */
export async function deleteAnnotation(
  repositories: Pick<DomainRepositories, 'annotations'>,
  siteFor: (id: string) => Promise<Site>,
  id: string,
): Promise<void> {
  const notFound = new ApiError(404, 'annotation not found')
  const siteId = await repositories.annotations.siteOf(id)
  if (!siteId) throw notFound
  const site = await siteFor(siteId).catch((err) => {
    throw err instanceof ApiError && err.status === 404 ? notFound : err
  })
  if (!(await repositories.annotations.delete(site.id, id))) throw notFound
}
