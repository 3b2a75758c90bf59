/** One e-mail, as every mailer takes it: plain text, sent to every recipient at once. */
export interface MailMessage {
  to: string[]
  subject: string
  text: string
}

/** Sends e-mail: SMTP on Node, or the outbox folder when no SMTP server is configured. Workers have none. */
export interface Mailer {
  send(message: MailMessage): Promise<void>
}
