// The signal a handler of the plain unary routes (connect-unary.ts) finds in its context, aborted
// when its answer is no longer wanted, as connect-fastify's is: when the client goes away first (the
// response closes before the implementation has answered: an HTTP/1.1 connection closed, an HTTP/2
// stream reset) and, for every call still running, when the gateway's shutdown signal fires (the
// grace period that begins when the server starts to close has run out, index.ts). A deadline sends
// a call to connect-fastify, whose signal carries it.
//
// Why not Connect's createHandlerContext: it links a new AbortController to three signals through
// event listeners for each call and aborts it when the call ends, and an abort builds a DOMException
// whose stack trace is captured. Here a call costs one AbortController, one listener on its response
// and a place in a set; only a call that is really abandoned is aborted. So, unlike Connect's, the
// signal of a call that ended normally is not aborted afterwards: work a handler leaves running past
// its answer is not stopped by it.
import type { Http2ServerResponse } from 'node:http2'
import type { ServerResponse } from 'node:http'
import { Code, ConnectError } from '@connectrpc/connect'

export interface CallSignal {
  readonly signal: AbortSignal
  /** The implementation has answered: the response closing no longer aborts the call. */
  end (): void
}

export interface CallSignals {
  /** The signal of a call about to run, whose answer goes to `response`. */
  open (response: ServerResponse | Http2ServerResponse): CallSignal
}

export function callSignals (shutdown: AbortSignal | undefined): CallSignals {
  const running = new Set<AbortController>()
  shutdown?.addEventListener('abort', () => {
    for (const call of running) call.abort(shutdown.reason)
    running.clear()
  }, { once: true })

  return {
    open (response) {
      const call = new AbortController()
      if (shutdown?.aborted === true) {
        call.abort(shutdown.reason)
        return { signal: call.signal, end: noop }
      }
      if (isClosed(response)) {
        call.abort(clientGone())
        return { signal: call.signal, end: noop }
      }
      const onClose = (): void => {
        running.delete(call)
        call.abort(clientGone())
      }
      running.add(call)
      response.once('close', onClose)
      return {
        signal: call.signal,
        end () {
          running.delete(call)
          response.off('close', onClose)
        }
      }
    }
  }
}

/** Closed before the call began: the client left while its request was being read. */
function isClosed (response: ServerResponse | Http2ServerResponse): boolean {
  return 'stream' in response ? response.stream.closed : response.destroyed
}

/** Connect's own word for a call its client abandoned (connect-node says it of a reset HTTP/2 stream). */
function clientGone (): ConnectError {
  return new ConnectError('the client closed the connection before the answer', Code.Canceled)
}

function noop (): void {}
