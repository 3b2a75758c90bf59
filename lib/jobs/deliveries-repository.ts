import type { Redis } from '@upstash/redis'

/** A delivery's state: `sending` while claimed, `sent` once delivered. */
const deliveryKey = (id: string) => `delivery:${id}`

/** A sent report's record outlives its period (a month) and the next due day. */
const DELIVERY_RECORD_SECONDS = 400 * 86_400

/** Which scheduled deliveries (reports, alerts) are being sent or were sent, so each goes out once. */
export class DeliveriesRepository {
  constructor(private readonly kv: Redis) {}

  /** Claims one delivery for `leaseSeconds`: true for the one caller that may send it, false once claimed or sent. */
  async claim(id: string, leaseSeconds: number): Promise<boolean> {
    return (await this.kv.set(deliveryKey(id), 'sending', { nx: true, ex: leaseSeconds })) === 'OK'
  }

  /** Records a delivery as sent, for long enough that its period is never due again. */
  async markSent(id: string) {
    await this.kv.set(deliveryKey(id), 'sent', { ex: DELIVERY_RECORD_SECONDS })
  }

  /** Gives a failed delivery's claim back, so the next run retries it. */
  async release(id: string) {
    await this.kv.del(deliveryKey(id))
  }
}
