/**
 * Outgoing webhooks: a JSON body signed with HMAC-SHA256 under the site's secret, sent in
 * `X-Signature: sha256=<hex>`, retried with backoff. Receivers verify the signature over the raw
 * body and may drop repeats by `X-Delivery-Id`.
 */

export const SIGNATURE_HEADER = 'X-Signature'

export async function signBody(secret: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(body)))
  return `sha256=${[...mac].map((b) => b.toString(16).padStart(2, '0')).join('')}`
}

/** Waits before the second, third and fourth attempt. */
export const WEBHOOK_RETRY_DELAYS_MS = [2_000, 10_000, 30_000]

export class WebhookError extends Error {}

/** A refusal that another attempt will not change (a 4xx other than 408 and 429). */
const isFinal = (status: number) => status >= 400 && status < 500 && status !== 408 && status !== 429

/**
 * Posts the payload through `fetcher` (the guarded fetch) until a 2xx answer or the last attempt.
 * Throws a WebhookError naming the last failure.
 */
export async function sendWebhook(
  fetcher: typeof fetch,
  target: { url: string; secret: string },
  payload: { deliveryId: string; event: string } & Record<string, unknown>,
  retryDelaysMs: number[] = WEBHOOK_RETRY_DELAYS_MS,
): Promise<{ attempts: number }> {
  const body = JSON.stringify(payload)
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'web-analytics-webhooks/1',
    [SIGNATURE_HEADER]: await signBody(target.secret, body),
    'X-Delivery-Id': payload.deliveryId,
    'X-Event': payload.event,
  }
  let failure = ''
  for (let attempt = 1; attempt <= retryDelaysMs.length + 1; attempt++) {
    if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, retryDelaysMs[attempt - 2]))
    try {
      const response = await fetcher(target.url, { method: 'POST', headers, body })
      if (response.ok) return { attempts: attempt }
      failure = `answered ${response.status}`
      if (isFinal(response.status)) break
    } catch (err) {
      failure = (err as Error).message
    }
  }
  throw new WebhookError(`webhook ${new URL(target.url).host} failed: ${failure}`)
}
