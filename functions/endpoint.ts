import { z } from 'zod'
import type { ApiKeyRecord } from '../lib/accounts/keys'
import type { LimitClass } from '../lib/accounts/ratelimit'
import type { Services } from '../lib/runtime/services'
import type { Site } from '../lib/sites/sites'

export type EndpointScope = 'public' | 'read' | 'write'

/**
 * What people come for, in the order they come for it: the sections of the reference page and
 * the MCP toolsets (`/api/mcp?toolsets=reports,behaviour`).
 */
export const GROUPS = {
  reports: 'Reports',
  behaviour: 'Behaviour',
  pages: 'Pages and changes',
  why: 'Why traffic changed',
  settings: 'Sites and settings',
  team: 'Team',
  tracking: 'Tracking and public',
  meta: 'Meta',
} as const
export type Group = keyof typeof GROUPS
export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE'
type AnyObject = z.ZodObject<z.ZodRawShape>

/** What a handler is given: the services, the caller, and the request it came in. No transport types. */
export interface EndpointContext {
  services: Services
  /** The caller's key; public endpoints never read it. */
  key: ApiKeyRecord
  request: Request
  /** The home's per-request environment (the Node socket, Workers bindings), for the client address. */
  env: unknown
  /** The origin clients reach this service at. */
  baseUrl: string
  /** The site by UUID or snippet id, or the same 404 for missing and foreign sites. */
  site(idOrSnippet: string): Promise<Site>
  /** Work that may finish after the answer (Workers keep the isolate alive for it). */
  background(task: Promise<unknown>): void
  /** The same call made with another key: an MCP request's tool calls, each admitted on its own. */
  withKey(key: ApiKeyRecord): EndpointContext
}

/** A JSON answer serialised ahead (a cached body): sent as it is, in one write with its length. */
export class SerializedAnswer {
  constructor(
    readonly text: string,
    readonly headers: Record<string, string>,
  ) {}
}

/** A success answer that is not JSON: a script, or no body at all. */
export interface RawAnswer {
  mediaType: string | null
  description: string
}

export interface Endpoint<P extends AnyObject = AnyObject, B extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  method: Method
  /** OpenAPI-style path: `/api/v1/sites/{site_id}`. */
  path: string
  scope: EndpointScope
  /** Its section and toolset; the registry gives each file's endpoints theirs, a declaration may say otherwise. */
  group?: Group
  /** The MCP tool name, or null for endpoints that are not tools. */
  tool: string | null
  summary: string
  /** What an agent needs to read the answer right: units, fractions versus percentages, key parameters. */
  description?: string
  /** Path and query parameters together. */
  params?: P
  body?: B
  /** The handler reads and checks its own input (hot paths); `params` and `body` then only document it. */
  validatesOwnInput?: boolean
  /**
   * Called by every page view (the collector, the public count): answered ahead of the app's
   * middleware by a transport that does only what it needs (hot-path.ts). Public, and validates its own input.
   */
  hotPath?: boolean
  /** The largest body taken, in bytes (default DEFAULT_MAX_BODY_BYTES); a larger one is 413 before it is read whole. */
  maxBodyBytes?: number
  /** The status of a success (default 200). */
  status?: 200 | 201 | 202
  /** The schema of a success answer: the OpenAPI document, MCP's outputSchema and the API tests read it. */
  response: R | RawAnswer
  limit?: LimitClass
  /** Ends something that cannot be had back, as a DELETE does: a rotation that revokes the old secret (MCP's destructiveHint). */
  destructive?: boolean
  /** Refuses site-bound keys (the organization's keys and team, adding or deleting sites). */
  orgWide?: boolean
  /**
   * Takes a site-bound write key in the URL (`?key=`), for log drains and platforms that can only
   * call a fixed URL. URLs get logged, so only ingestion endpoints do.
   */
  keyInUrl?: boolean
  /**
   * The answer's data; a whole Response where the endpoint writes its own (scripts, MCP); a
   * SerializedAnswer for a cached body; nothing for an empty answer. A hot path may answer at once
   * (not a promise): its transport then writes the answer in the turn the request came in.
   */
  handler(ctx: EndpointContext, input: { params: z.infer<P>; body: z.infer<B> }): Answer<R> | Promise<Answer<R>>
}

type Answer<R extends z.ZodType> = z.input<R> | Response | SerializedAnswer | undefined

/** What a settings write or any other small JSON body needs. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024

/**
 * An endpoint as declared: an Endpoint whose type still names its method, its path and what its
 * handler answers, so that a caller naming the method and path (the web application's, functions/web/api.ts)
 * is given the answer's type. `answer` is a type only: no endpoint carries it.
 */
export type Declared<M extends Method = Method, Path extends string = string, R extends z.ZodType = z.ZodType> = Endpoint & {
  method: M
  path: Path
  readonly answer?: z.input<R>
}

export const defineEndpoint = <
  M extends Method,
  Path extends string,
  P extends AnyObject = AnyObject,
  B extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
>(
  e: Endpoint<P, B, R> & { method: M; path: Path },
) => e as unknown as Declared<M, Path, R>

export const isJsonAnswer = (response: Endpoint['response']): response is z.ZodType => response instanceof z.ZodType

export const pathParamNames = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
