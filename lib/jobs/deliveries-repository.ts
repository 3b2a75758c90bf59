import type { Redis } from '@upstash/redis'
import { Lease } from '../storage/kv/lease'

/** A delivery's state: its sender's id while claimed (a lease), `sent` once delivered. */
const deliveryKey = (id: string) => `delivery:${id}`

/** A sent report's record outlives its period (a month) and the next due day. */
const DELIVERY_RECORD_SECONDS = 400 * 86_400

/** Which scheduled deliveries (reports, alerts) are being sent or were sent, so each goes out once. */
export class DeliveriesRepository {
  private readonly lease: Lease

  constructor(private readonly kv: Redis) {
    this.lease = new Lease(kv)
  }

  /** Claims one delivery for `holder`, for `leaseSeconds`: true for the one caller that may send it, false once claimed or sent. */
  claim(id: string, holder: string, leaseSeconds: number): Promise<boolean> {
    return this.lease.take(deliveryKey(id), holder, leaseSeconds)
  }

  /** Records a delivery as sent, for long enough that its period is never due again. */
  async markSent(id: string) {
    await this.kv.set(deliveryKey(id), 'sent', { ex: DELIVERY_RECORD_SECONDS })
  }

  /** Gives a failed delivery's claim back, so the next run retries it; a claim that passed to another holder stays. */
  async release(id: string, holder: string) {
    await this.lease.release(deliveryKey(id), holder)
  }
}
