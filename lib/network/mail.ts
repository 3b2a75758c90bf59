/** One e-mail, as every mailer takes it: plain text (and an HTML alternative where given), sent to every recipient at once. */
export interface MailMessage {
  to: string[]
  subject: string
  text: string
  /** The same message as HTML, sent beside the text as an alternative. */
  html?: string
}

/** Sends e-mail: SMTP on Node, or the outbox folder when no SMTP server is configured. Workers have none. */
export interface Mailer {
  send(message: MailMessage): Promise<void>
  /** Where messages are written instead of sent, when no mail server is configured: the outbox folder. */
  outbox?: string
}
