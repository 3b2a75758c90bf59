import type { SourceRepositories } from '../integrations/source-services'
import type { OperationServices } from '../operations/operation-services'
import type { DeliveriesRepository } from './deliveries-repository'

/** Every repository: the sources' and the scheduled jobs' deliveries. */
export interface JobRepositories extends SourceRepositories {
  deliveries: DeliveriesRepository
}

/** What the scheduled jobs may use. */
export interface JobServices extends OperationServices {
  repositories: JobRepositories
}
