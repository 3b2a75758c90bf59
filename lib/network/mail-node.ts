import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { Mailer } from './mail'

/** Where messages go without SMTP: the outbox folder of the data directory. */
export const outboxDir = (dataDir: string) => join(dataDir, 'outbox')

/**
 * The Node home's mailer: SMTP through nodemailer when `smtpUrl` is set (smtp://user:pass@host:587,
 * smtps://... for implicit TLS); otherwise each message is written whole as an .eml file to the
 * outbox under `dataDir` and its path logged, so a local install shows what it would have sent.
 */
export function nodeMailer(options: { smtpUrl?: string; dataDir: string; from: string; log: (message: string) => void }): Mailer {
  if (options.smtpUrl) {
    const transport = nodemailer.createTransport(options.smtpUrl)
    return {
      async send(message) {
        await transport.sendMail({ from: options.from, to: message.to, subject: message.subject, text: message.text })
      },
    }
  }
  const writer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
  return {
    async send(message) {
      const { message: raw } = (await writer.sendMail({
        from: options.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
      })) as { message: Buffer }
      const outbox = outboxDir(options.dataDir)
      mkdirSync(outbox, { recursive: true })
      const file = join(outbox, `${new Date().toISOString().replace(/[:.]/g, '-')}-${crypto.randomUUID().slice(0, 8)}.eml`)
      writeFileSync(file, raw)
      options.log(`no SMTP_URL: e-mail "${message.subject}" to ${message.to.join(', ')} written to ${file}`)
    },
  }
}
