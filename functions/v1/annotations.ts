import { z } from 'zod'
import {
  ANNOTATION_LIST_MAX,
  annotatedSite,
  annotationInputSchema,
  createAnnotation,
  deleteAnnotation,
  instantSchema,
  listAnnotations,
} from '../../lib/sites/annotations'
import { ANNOTATION_KINDS } from '../../lib/sites/definition-records'
import { defineEndpoint } from '../endpoint'
import { uuidParam } from '../params'
import { siteRefSchema } from '../../lib/sites/sites'

const annotationSchema = z.object({
  id: z.uuid(),
  siteId: z.uuid(),
  title: z.string(),
  at: z.string().describe('ISO 8601, UTC'),
  kind: z.enum(ANNOTATION_KINDS),
  body: z.string().nullable(),
  url: z.string().nullable(),
  createdAt: z.string(),
})

export const annotationEndpoints = [
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/annotations',
    scope: 'write',
    tool: 'create_annotation',
    summary: 'Places a marker on the traffic chart (a deploy, a campaign, a newsletter...) and returns it with its id.',
    description:
      'Name the site by siteId (its UUID) or domain. title is required, at most 200 characters. at is an ISO 8601 timestamp with an offset (default now), stored and answered in UTC. kind is one of deploy, campaign, email, content, note, spike_source, other (default note). body (up to 5000 characters) and url (http or https only) are optional and answer null when absent.',
    body: annotationInputSchema,
    status: 201,
    response: annotationSchema,
    async handler({ services, key, site }, { body }) {
      const target = await annotatedSite(services.repositories, site, key.orgId, body)
      return createAnnotation(services.repositories, target, body, services.now())
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/annotations',
    scope: 'read',
    tool: 'list_annotations',
    summary: `A site's annotations, newest first, at most ${ANNOTATION_LIST_MAX}.`,
    description: `siteId (or site_id, as the other reads name it) is the site UUID or its snippet id. from and to are optional ISO 8601 timestamps with an offset; both bounds are included. Ordered by at, newest first; at most ${ANNOTATION_LIST_MAX}.`,
    params: z
      .object({
        siteId: siteRefSchema.optional(),
        site_id: siteRefSchema.optional().describe('The same as siteId'),
        from: instantSchema.optional(),
        to: instantSchema.optional(),
      })
      .refine((p) => p.siteId !== undefined || p.site_id !== undefined, { message: 'required', path: ['site_id'] })
      .refine((p) => p.siteId === undefined || p.site_id === undefined || p.siteId === p.site_id, {
        message: 'names another site than siteId; send one of them',
        path: ['site_id'],
      }),
    response: z.object({ annotations: z.array(annotationSchema) }),
    async handler({ services, site }, { params }) {
      const annotated = await site((params.siteId ?? params.site_id) as string)
      return { annotations: await listAnnotations(services.repositories, annotated, params) }
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/annotations',
    scope: 'write',
    tool: 'delete_annotation',
    summary: 'Deletes one annotation by id.',
    params: z.object({ id: uuidParam.describe('The annotation id') }),
    response: z.object({ deleted: z.literal(true), id: z.uuid() }),
    async handler({ services, site }, { params }) {
      await deleteAnnotation(services.repositories, site, params.id)
      return { deleted: true as const, id: params.id }
    },
  }),
]
