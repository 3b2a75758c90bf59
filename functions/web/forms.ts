import type { Context } from 'hono'
import type { z } from 'zod'
import { ApiError, describeZodError } from '../../lib/core/errors'

/** A posted form read with a zod schema: a 400 naming the field, as the API answers bad input. */
export async function readForm<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  const form = await c.req.parseBody()
  // an empty optional field is no value at all
  const values = Object.fromEntries(Object.entries(form).filter(([, v]) => typeof v === 'string' && v.trim() !== ''))
  const parsed = schema.safeParse(Object.fromEntries(Object.entries(values).map(([k, v]) => [k, String(v).trim()])))
  if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'body', values))
  return parsed.data
}
