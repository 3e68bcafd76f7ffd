// One mail transport for every message: SMTP via nodemailer when SMTP_URL is set, otherwise an
// outbox folder (one JSON file per message) plus a log line, so a first run needs no mail server.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export interface MailMessage {
  to: string
  subject: string
  /** Plain-text body; action links carry `token=<token>` in their query string (DECISIONS §2). */
  text: string
}

export interface Mailer {
  send (message: MailMessage): Promise<void>
  close (): void
}

export interface MailLog {
  info (details: Record<string, unknown>, message: string): void
}

export async function createMailer (options: { smtpUrl: string | undefined, from: string, dataDir: string, log: MailLog }): Promise<Mailer> {
  if (options.smtpUrl !== undefined) {
    // Loaded only with SMTP_URL set: the outbox needs none of it.
    const { default: nodemailer } = await import('nodemailer')
    const transport = nodemailer.createTransport({
      url: options.smtpUrl,
      // Fail fast: the caller is waiting for the answer and gets a clear 503 instead.
      connectionTimeout: 5_000,
      greetingTimeout: 5_000,
      socketTimeout: 10_000
    })
    return {
      send: async (message) => { await transport.sendMail({ from: options.from, ...message }) },
      close: () => { transport.close() }
    }
  }
  const outbox = join(options.dataDir, 'outbox')
  let sequence = 0
  return {
    send: async (message) => {
      await mkdir(outbox, { recursive: true })
      sequence += 1
      const name = `${Date.now()}-${process.pid}-${String(sequence).padStart(6, '0')}.json`
      const file = join(outbox, name)
      await writeFile(file, JSON.stringify({ from: options.from, ...message, sentAt: new Date().toISOString() }, null, 2))
      options.log.info({ to: message.to, subject: message.subject, file }, 'mail written to outbox')
    },
    close: () => {}
  }
}
