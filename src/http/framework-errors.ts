// Errors Fastify raises before routing (a path that is not valid percent-encoding, a path segment
// longer than the router accepts) answer in the envelope of the transport the path belongs to:
// Connect's error JSON under /rpc, the REST envelope everywhere else (refusals.ts).
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { refusalWriterFor, type EdgeRefusals } from './refusals.js'
import type { RequestEnds } from './request-end.js'
import { answerRequestId } from './request-id.js'

/** The longest path segment the router accepts: ids are at most 200 characters (the core's id schemas),
 *  so every id the core could answer for reaches it, through REST as through RPC. */
export const MAX_PATH_PARAM_LENGTH = 200

export function frameworkErrorAnswer (refusals: EdgeRefusals, ends: RequestEnds) {
  return function answerFrameworkError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
    const message = error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `A path segment is longer than ${MAX_PATH_PARAM_LENGTH} characters.`
      : error.code === 'FST_ERR_BAD_URL' ? 'The path is not valid percent-encoding.' : error.message
    // Fastify answers these before any hook runs, so the request id and the request's end are ours.
    answerRequestId(request, reply)
    ends.watch(request, reply)
    const { status, contentType, body } = refusalWriterFor(refusals, request.url)('bad_request', message)
    void reply.code(status).type(contentType).send(body)
  }
}
