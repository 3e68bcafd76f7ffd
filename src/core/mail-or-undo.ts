// Mail that carries a secret link (sign-in, account deletion, office invitation): when it cannot be
// sent, what was stored for it is removed, so no token stays usable that nobody received, and the
// caller gets a clear 503 to retry.
import type { MailMessage } from '../infra/mail.js'
import type { CoreDeps } from './deps.js'
import { AppError } from './errors.js'
import { logThrottled } from '../infra/throttled-log.js'

export async function sendOrUndo (deps: Pick<CoreDeps, 'mailer' | 'log'>, message: MailMessage, undo: () => Promise<void>): Promise<void> {
  try {
    await deps.mailer.send(message)
  } catch (error) {
    logThrottled(deps.log, 'error', 'mail delivery failed', { err: error, to: message.to })
    await undo()
    throw new AppError('unavailable', 'The e-mail could not be sent. Please try again later.')
  }
}
