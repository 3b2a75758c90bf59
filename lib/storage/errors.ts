/**
 * A write refused because it would break what the store keeps unique (a domain taken twice in an
 * organization). The API answers it as 409 with this message (functions/invoke.ts).
 */
export class ConflictError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConflictError'
  }
}
