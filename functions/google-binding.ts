import { parse } from 'hono/utils/cookie'

/** The cookie holding the secret that binds a connect to the browser that started it. */
export const CONNECT_COOKIE = 'google_connect'

/** The connect secret a request's browser holds, if any: the callback and the confirmation take a connect only from it. */
export const connectBinding = (request: Request): string | null =>
  parse(request.headers.get('cookie') ?? '', CONNECT_COOKIE)[CONNECT_COOKIE] || null
