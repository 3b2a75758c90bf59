import { z } from 'zod'

/** The stored result of one look at a site's homepage (made by install-check.ts). */

export const INSTALL_RESULTS = ['found', 'unreachable', 'script_missing', 'other_site', 'blocked_by_csp'] as const
export type InstallResult = (typeof INSTALL_RESULTS)[number]

export const installCheckSchema = z.object({
  checkedAt: z.string(),
  url: z.string().describe('The page fetched'),
  result: z
    .enum(INSTALL_RESULTS)
    .describe(
      'found; unreachable (see status); script_missing; other_site (the tag of another site); blocked_by_csp (the tag is there, the page policy stops it)',
    ),
  status: z.number().int().nullable().describe('The HTTP status of the homepage; null when it did not answer'),
  detail: z.string().describe('What was found or what is wrong, in words'),
})
export type InstallCheck = z.infer<typeof installCheckSchema>
