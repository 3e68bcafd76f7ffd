// A client's deadline becomes a Node timer in Connect's handler, and Node timers hold at most
// 2^31−1 ms (24.8 days): a longer one (Connect-Timeout-Ms allows 10 digits, grpc-timeout 8 digits of
// hours) fires after 1 ms instead, with a TimeoutOverflowWarning on stderr for every such call.
// Deadlines past the limit are lowered to it before Connect reads them; no call runs that long.
import type { FastifyInstance } from 'fastify'

const MAX_TIMER_MS = 2 ** 31 - 1
const GRPC_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000001 }

export function clampDeadlines (app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const headers = request.headers
    const connect = headers['connect-timeout-ms']
    if (typeof connect === 'string' && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_TIMER_MS) {
      headers['connect-timeout-ms'] = String(MAX_TIMER_MS)
    }
    const grpc = headers['grpc-timeout']
    const parsed = typeof grpc === 'string' ? /^(\d{1,8})([HMSmun])$/.exec(grpc) : null
    if (parsed !== null && Number(parsed[1]) * (GRPC_UNIT_MS[parsed[2] ?? ''] ?? 0) > MAX_TIMER_MS) {
      // In seconds: the limit in milliseconds has more digits than grpc-timeout allows.
      headers['grpc-timeout'] = `${Math.floor(MAX_TIMER_MS / 1000)}S`
    }
    done()
  })
}
