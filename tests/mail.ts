import PostalMime from 'postal-mime'

/**
 * A received message as a mail client shows it: each part decoded (its transfer encoding and
 * charset undone), so that a link reads whole. `all` is the headers, then the text and HTML parts.
 */
export async function readMail(raw: string) {
  const email = await PostalMime.parse(raw)
  const text = email.text ?? ''
  const html = email.html ?? ''
  return { text, html, all: [...email.headers.map((h) => `${h.key}: ${h.value}`), text, html].join('\n') }
}
