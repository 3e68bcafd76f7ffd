// /api/rtc (DECISIONS §5 table, §9): a video/voice token (exempt tier) and the configuration.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { GenerateTokenInput } from '../core/rtc/rtc.types.js'
import { actorOf } from './identity.js'
import { RtcConfig, RtcToken, ok } from './responses.js'

export function rtcRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { rtc } = core

    r.post('/token', { schema: { summary: 'A video/voice token for a room or office you may enter', tags: ['rtc'], response: ok(RtcToken), body: GenerateTokenInput }, config: { operation: 'rtc.generateToken' } }, async (request) => {
      return { data: await rtc.generateToken(actorOf(request), request.body) }
    })

    r.get('/config', { schema: { summary: 'Video/voice configuration', tags: ['rtc'], response: ok(RtcConfig) }, config: { operation: 'rtc.getConfig' } }, async () => {
      return { data: rtc.config() }
    })
  }
}
