// Errors Fastify raises before routing (a path that is not valid percent-encoding, a path segment
// longer than the router accepts) answer in the envelope of the transport the path belongs to:
// Connect's error JSON under /rpc, the REST envelope everywhere else.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { restRefusal, sendRestError } from '../rest/errors.js'
import { connectErrorReply, rpcRefusal } from '../rpc/errors.js'
import { RPC_PREFIX } from '../rpc/index.js'

/** The longest path segment the router accepts: ids are at most 200 characters (the core's id schemas),
 *  so every id the core could answer for reaches it, through REST as through RPC. */
export const MAX_PATH_PARAM_LENGTH = 200

export function answerFrameworkError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const message = error.code === 'FST_ERR_MAX_PARAM_LENGTH'
    ? `A path segment is longer than ${MAX_PATH_PARAM_LENGTH} characters.`
    : error.code === 'FST_ERR_BAD_URL' ? 'The path is not valid percent-encoding.' : error.message
  if (request.url.startsWith(`${RPC_PREFIX}/`)) {
    const { status, body } = connectErrorReply(rpcRefusal('bad_request', message))
    void reply.code(status).type('application/json').send(Buffer.from(body))
  } else {
    void sendRestError(reply, restRefusal('bad_request', message))
  }
}
