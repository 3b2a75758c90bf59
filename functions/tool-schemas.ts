import type { Tool, ToolAnnotations } from '@modelcontextprotocol/server'
import { type Endpoint, isJsonAnswer } from './endpoint'
import { outputSchema, toolInputSchema } from './openapi'

/**
 * The MCP tool list, compact: a write key's whole list stays under 60 KB (tests/e2e/mcp.test.ts
 * measures it), in portable JSON Schema. The REST API and its OpenAPI document keep the full
 * schemas; the tools share their meaning through the server's instructions (MCP_INSTRUCTIONS).
 */

/**
 * The parameters many tools share, described once in the server's instructions rather than in
 * every tool (they are most of the bytes of a tool list otherwise): each keeps its type, and the
 * instructions list the names a range takes and say that limit is clamped. A range whose default
 * is not the usual 30d keeps its default.
 */
const SHARED_PARAMETERS: Record<string, Schema> = {
  site_id: { type: 'string' },
  range: { type: 'string' },
  limit: { type: 'integer' },
  source: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  // an array of filter objects; that array as JSON text is taken too (both arrive as the JSON text the REST query carries,
  // toolInput), but a schema says one type: a list of types is what some clients cannot take
  filters: { type: 'array' },
  compare: { type: 'string' },
  compare_from: { type: 'string' },
  compare_to: { type: 'string' },
}

/** The formats of JSON Schema itself (2020-12): any validator knows them. Zod's others (cidrv4, ...) make clients warn. */
const PORTABLE_FORMATS = new Set([
  'date-time',
  'date',
  'time',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uri',
  'uri-reference',
  'uuid',
])

type Schema = Record<string, unknown>

/** Checks the server makes anyway, naming the field in its error: a tool's input schema leaves them out (descriptions say the bounds that matter). */
const SERVER_CHECKS = new Set([
  'pattern',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
])

/**
 * A tool's input schema, compact and with only portable JSON Schema: formats a validator may not
 * know are dropped (the zod schemas the REST API validates with keep them), and so are the
 * length and pattern checks the server makes and names in its 400 anyway.
 */
export function portableInput(schema: unknown): unknown {
  if (Array.isArray(schema)) return dedupe(schema.map(portableInput))
  if (typeof schema !== 'object' || schema === null) return schema
  const out: Schema = {}
  for (const [key, value] of Object.entries(schema as Schema)) {
    if (key === 'format' && !PORTABLE_FORMATS.has(value as string)) continue
    if (SERVER_CHECKS.has(key)) continue
    out[key] = key === 'properties' ? mapValues(value as Schema, portableInput) : portableInput(value)
  }
  return portable(out)
}

/** Alternatives said once each: four kinds of IP address left as four plain strings are one string. */
const dedupe = (list: unknown[]) => {
  const seen = new Set<string>()
  return list.filter((item) => {
    const text = JSON.stringify(item)
    return !seen.has(text) && seen.add(text)
  })
}

/**
 * The same schema in the JSON Schema every client takes: anyOf (or oneOf) with one alternative, or
 * with a plain type every alternative has, is that, a const is an enum of one value, and a list of types (`["string", "null"]`)
 * is anyOf its types. A nullable value stays anyOf a type and null.
 */
function portable(schema: Schema): Schema {
  if ('const' in schema) {
    const { const: value, ...rest } = schema
    return portable({ ...rest, enum: [value] })
  }
  if (Array.isArray(schema.type)) {
    const { type, ...rest } = schema
    return { anyOf: (type as string[]).map((t) => ({ type: t })), ...rest }
  }
  const keyword = schema.anyOf ? 'anyOf' : 'oneOf'
  const options = schema[keyword] as Schema[] | undefined
  if (!options) return schema
  const { [keyword]: _, ...rest } = schema
  if (options.length === 1) return { ...rest, ...options[0] }
  // an IPv4 address, an IPv6 address or any string is any string
  const any = options.find((o) => Object.keys(o).length === 1 && typeof o.type === 'string')
  if (any && options.every((o) => o.type === any.type)) return { ...rest, ...any }
  return schema
}

/** What an output schema keeps: the shape of the answer. Its meaning is in the tool's description and the REST docs. */
const OUTPUT_KEYWORDS = new Set(['type', 'properties', 'items', 'anyOf', 'oneOf', 'enum', 'const', 'additionalProperties'])

/** The bytes an output schema may take: below the depth that fits, an object or array is said to be one, of any shape. */
const OUTPUT_BYTES = 350

/**
 * A compact output schema: types, properties, items and enums only (no descriptions, bounds,
 * formats or required lists), an object whose properties all share one shape said once
 * (`additionalProperties`), and the deepest levels left as any object or array.
 */
export function compactOutput(schema: unknown): unknown {
  // every report echoes the window and the source it read, the same each time: the instructions describe them once,
  // and the comparison a read adds with compare, and the sampling note a sampled read adds
  const {
    range,
    comparison: _comparison,
    sampling: _sampling,
    ...properties
  } = ((schema as Schema).properties ?? {}) as Record<string, Schema | undefined>
  if (range?.type === 'object') schema = { ...(schema as Schema), properties }
  if (range?.type === 'object' && properties.source?.enum)
    schema = { ...(schema as Schema), properties: { ...properties, source: { type: 'string' } } }
  for (let depth = 4; depth > 1; depth--) {
    const compact = compactTo(schema, depth)
    if (JSON.stringify(compact).length <= OUTPUT_BYTES) return compact
  }
  return compactTo(schema, 1)
}

function compactTo(schema: unknown, maxDepth: number, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema
  const source = schema as Schema
  if (depth >= maxDepth && (source.type === 'object' || source.type === 'array')) return { type: source.type }
  const out: Schema = {}
  for (const [key, value] of Object.entries(source)) {
    if (!OUTPUT_KEYWORDS.has(key)) continue
    if (key === 'properties') out.properties = mapValues(value as Schema, (v) => compactTo(v, maxDepth, depth + 1))
    else if (key === 'anyOf' || key === 'oneOf') out[key] = dedupe((value as unknown[]).map((v) => compactTo(v, maxDepth, depth)))
    else if (key === 'additionalProperties') {
      if (value !== false) out.additionalProperties = compactTo(value, maxDepth, depth + 1)
    } else if (key === 'items') out.items = compactTo(value, maxDepth, depth + 1)
    else out[key] = value
  }
  const shapes = out.properties ? Object.values(out.properties as Schema).map((v) => JSON.stringify(v)) : []
  // the five vitals, say: the same object under each name; a row of plain numbers keeps its names
  if (shapes.length >= 3 && shapes.every((s) => s === shapes[0]) && shapes[0].startsWith('{"type":"object"')) {
    const { properties, ...rest } = out
    return { ...rest, additionalProperties: Object.values(properties as Schema)[0] }
  }
  const compact = portable(out)
  // a value of a plain type or null is named without its type: anyOf the two takes three times the bytes
  const options = compact.anyOf as Schema[] | undefined
  const plain = (s: Schema) => Object.keys(s).length === 1 && typeof s.type === 'string'
  if (Object.keys(compact).length === 1 && options?.length === 2 && options.every(plain) && options.some((o) => o.type === 'null'))
    return {}
  return compact
}

const mapValues = (object: Schema, f: (value: unknown) => unknown) =>
  Object.fromEntries(Object.entries(object).map(([key, value]) => [key, f(value)]))

/** A failed call's structured content: the status and message the REST call would answer. */
const TOOL_ERROR = {
  type: 'object',
  properties: { status: { type: 'integer' }, error: { type: 'string' } },
  required: ['status', 'error'],
}

/** What a tool's structured content is: the endpoint's answer, or the error of a failed call. */
function toolOutputSchema(endpoint: Endpoint) {
  if (!isJsonAnswer(endpoint.response)) return undefined
  const answer = compactOutput(outputSchema(endpoint.response)) as Schema & { properties?: Schema }
  // a compact schema requires no property, so a failure's {status, error} fits it unless the answer has fields of those names
  if (
    answer.type === 'object' &&
    !answer.anyOf &&
    !answer.oneOf &&
    !('status' in (answer.properties ?? {})) &&
    !('error' in (answer.properties ?? {}))
  )
    return answer as Schema & { type: 'object' }
  return { type: 'object' as const, anyOf: [answer, TOOL_ERROR] }
}

/** A tool's parameters: compact and portable, the shared ones as the instructions describe them. */
function toolParameters(endpoint: Endpoint) {
  const schema = portableInput(toolInputSchema(endpoint)) as { type: 'object'; properties: Record<string, Schema>; required: string[] }
  for (const [name, property] of Object.entries(schema.properties)) {
    // list_annotations's from and to are its own (timestamps, no range)
    const shared = name in SHARED_PARAMETERS && ((name !== 'from' && name !== 'to') || 'range' in schema.properties)
    const usualDefault = property.default === undefined || (name === 'range' && property.default === '30d')
    if (shared) schema.properties[name] = usualDefault ? SHARED_PARAMETERS[name] : { ...SHARED_PARAMETERS[name], default: property.default }
  }
  return schema
}

/** The characters of a tool's description: what it does, then the first of its details that fit. */
const DESCRIPTION_CHARS = 150

/**
 * What the tool does in one sentence, then as many whole sentences of how to read it as fit;
 * the rest is in the REST reference (GET /api/v1 and the OpenAPI document).
 */
function toolDescription(endpoint: Endpoint) {
  let text = endpoint.summary
  for (const sentence of endpoint.description?.split(/(?<=\.)\s+/) ?? []) {
    if (text.length + 1 + sentence.length > DESCRIPTION_CHARS) break
    text += ` ${sentence}`
  }
  return text
}

/** A tool's name as people read it: `list_api_keys` is "List API keys". */
export function toolTitle(name: string) {
  const words = name.split('_').map((word) => (/^(api|ga4|seo|url|ip|ai)$/.test(word) ? word.toUpperCase() : word))
  return words.join(' ').replace(/^./, (first) => first.toUpperCase())
}

/**
 * What a client may assume of a tool (MCP's defaults are: not read-only, destructive, not
 * idempotent): a read only reads; a write is destructive when it deletes or revokes, and
 * idempotent when the same call again changes nothing more (a PATCH, a DELETE).
 */
export function toolAnnotations(endpoint: Endpoint): ToolAnnotations {
  if (endpoint.method === 'GET') return { readOnlyHint: true }
  // said only where a write differs from the defaults, which the list would otherwise repeat 30 times
  const destructiveHint = endpoint.method === 'DELETE' || endpoint.destructive === true
  return endpoint.method === 'POST' ? { destructiveHint } : { destructiveHint, idempotentHint: true }
}

/** The tools as tools/list answers them. */
export function toolList(endpoints: Endpoint[]): Tool[] {
  return endpoints.map((e) => ({
    name: e.tool!,
    title: toolTitle(e.tool!),
    description: toolDescription(e),
    inputSchema: toolParameters(e) as Tool['inputSchema'],
    outputSchema: toolOutputSchema(e) as Tool['outputSchema'],
    annotations: toolAnnotations(e),
  }))
}
