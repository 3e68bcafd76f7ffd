// Every REST request passes the one gate (src/http/admission.ts) before its body is read: the session
// cookie (or a Bearer token, for the desktop app's event stream) names the caller, and a refusal is
// answered in the REST envelope.
import type { FastifyInstance } from 'fastify'
import { installAdmission } from '../http/admission.js'
import type { Core } from '../core/index.js'
import type { Limiter } from '../ratelimit/limiter.js'
import { sendAppError } from './errors.js'
import { credentialOf } from './identity.js'

export function installRequestGate (app: FastifyInstance, core: Core, limiter: Limiter | undefined): void {
  installAdmission(app, {
    transport: 'rest',
    core,
    limiter,
    credentialOf,
    credentialRequired: 'Sign in to continue.',
    refuse: async (_request, reply, error) => await sendAppError(reply, error)
  })
}
