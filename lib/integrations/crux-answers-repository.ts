import type { Redis } from '@upstash/redis'
import { asRecord } from '../storage/kv/records'

const cruxKey = (origin: string, formFactor: string) => `crux:${formFactor}:${origin}`

/** The Chrome UX Report's answers (lib/integrations/crux.ts), kept by origin and form factor until they expire. */
export class CruxAnswersRepository {
  constructor(private readonly kv: Redis) {}

  async get<T extends object>(origin: string, formFactor: string): Promise<T | null> {
    return asRecord<T>(await this.kv.get(cruxKey(origin, formFactor)))
  }

  async save(origin: string, formFactor: string, answer: object, seconds: number) {
    await this.kv.set(cruxKey(origin, formFactor), JSON.stringify(answer), { ex: seconds })
  }
}
