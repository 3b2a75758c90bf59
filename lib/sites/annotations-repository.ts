import type { Redis } from '@upstash/redis'
import { asString } from '../storage/kv/records'
import type { Annotation } from './definition-records'

const annotationsKey = {
  ofSite: (siteId: string) => `site:${siteId}:annotations`,
  /** The site of an annotation, so a delete by id alone can check who may delete it. */
  site: (id: string) => `annotation:${id}:site`,
}

/** A site's annotations (markers on the traffic chart), by id. */
export class AnnotationsRepository {
  constructor(private readonly kv: Redis) {}

  async list(siteId: string): Promise<Annotation[]> {
    return Object.values((await this.kv.hgetall<Record<string, Annotation>>(annotationsKey.ofSite(siteId))) ?? {})
  }

  async save(annotation: Annotation) {
    await this.kv
      .multi()
      .hset(annotationsKey.ofSite(annotation.siteId), { [annotation.id]: JSON.stringify(annotation) })
      .set(annotationsKey.site(annotation.id), annotation.siteId)
      .exec()
  }

  async siteOf(id: string): Promise<string | null> {
    return asString(await this.kv.get(annotationsKey.site(id)))
  }

  /** False when the site has no annotation of that id. */
  async delete(siteId: string, id: string): Promise<boolean> {
    const [removed] = await this.kv.multi().hdel(annotationsKey.ofSite(siteId), id).del(annotationsKey.site(id)).exec<[number, number]>()
    return removed === 1
  }

  /** Every annotation of a deleted site. */
  async deleteAll(siteId: string) {
    await this.kv.del(annotationsKey.ofSite(siteId))
  }
}
