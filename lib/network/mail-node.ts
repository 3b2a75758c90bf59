import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import type { MailMessage, Mailer } from './mail'

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
        await transport.sendMail(composed(options.from, message))
      },
    }
  }
  const writer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
  const outbox = outboxDir(options.dataDir)
  return {
    outbox,
    async send(message) {
      const { message: raw } = (await writer.sendMail(composed(options.from, message))) as { message: Buffer }
      mkdirSync(outbox, { recursive: true })
      const file = join(outbox, `${new Date().toISOString().replace(/[:.]/g, '-')}-${crypto.randomUUID().slice(0, 8)}.eml`)
      writeFileSync(file, raw)
      options.log(`no SMTP_URL: e-mail "${message.subject}" to ${message.to.join(', ')} written to ${file}`)
    },
  }
}

/** The longest line SMTP carries (RFC 5321), without its line break. */
const SMTP_LINE_OCTETS = 998

/**
 * The message as nodemailer takes it. Beside an HTML part, the text part is written as it is
 * (7bit, or 8bit beyond ASCII) rather than in quoted-printable, which nodemailer picks for any line
 * over 76 characters: its soft line breaks and `=3D` would cut a link in the raw message (an .eml
 * of the outbox read as text), so that it no longer copies whole. A line too long for SMTP is left
 * to nodemailer's encoding.
 */
function composed(from: string, message: MailMessage) {
  const base = { from, to: message.to, subject: message.subject }
  if (message.html === undefined) return { ...base, text: message.text }
  const lines = message.text.split(/\r?\n/)
  const text = lines.some((line) => Buffer.byteLength(line) > SMTP_LINE_OCTETS)
    ? message.text
    : {
        raw: [
          'Content-Type: text/plain; charset=utf-8',
          `Content-Transfer-Encoding: ${/^[\x20-\x7e\t]*$/.test(lines.join('')) ? '7bit' : '8bit'}`,
          '',
          ...lines,
        ].join('\r\n'),
      }
  return { ...base, text, html: message.html }
}
