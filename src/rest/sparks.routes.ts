// /api/sparks: a room's sparks (?roomId=), one spark, create, edit (If-Match: <version>), move,
// delete. Parse → one core call → `{ data }`. The spark's version is also its ETag.
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Core } from '../core/index.js'
import { CreateSparkInput, ListSparksQuery, MoveSparkBody, SparkIdParams, UpdateSparkBody, type Spark } from '../core/sparks/sparks.types.js'
import { actorOf } from './identity.js'
import { Spark as SparkResource, SparkMove, created, list, noContent, ok } from './responses.js'

/** `If-Match: 3`, `"3"` or `W/"3"` names the version the edit is based on; `*` matches any. */
const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ maxLength: 32, pattern: '^\\s*(\\*|(W/)?"?[0-9]{1,10}"?)\\s*$', errorMessage: 'must be the spark\'s version, e.g. "3"' }))
})

function expectedVersionOf (ifMatch: string | undefined): number | undefined {
  const digits = ifMatch?.match(/[0-9]+/)?.[0]
  return digits === undefined ? undefined : Number(digits)
}

function withEtag (reply: FastifyReply, spark: Spark): { data: Spark } {
  void reply.header('etag', `"${spark.version}"`)
  return { data: spark }
}

export function sparkRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.get('/', { schema: { summary: "A room's sparks", tags: ['sparks'], response: list(SparkResource), querystring: ListSparksQuery }, config: { operation: 'sparks.listSparks' } }, async (request) => {
      const { items, pagination } = await core.sparks.list(actorOf(request), request.query)
      return { data: items, pagination }
    })

    r.get('/:sparkId', { schema: { summary: 'One spark (with its ETag)', tags: ['sparks'], response: ok(SparkResource), params: SparkIdParams }, config: { operation: 'sparks.getSpark', etag: true } }, async (request, reply) => {
      return withEtag(reply, await core.sparks.get(actorOf(request), request.params))
    })

    r.post('/', { schema: { summary: 'Create a spark', tags: ['sparks'], response: created(SparkResource), body: CreateSparkInput }, config: { operation: 'sparks.createSpark', idempotent: true, etag: true } }, async (request, reply) => {
      const spark = await core.sparks.create(actorOf(request), request.body)
      return await reply.code(201).send(withEtag(reply, spark))
    })

    r.patch('/:sparkId', { schema: { summary: 'Update a spark (If-Match: its version)', tags: ['sparks'], response: ok(SparkResource), params: SparkIdParams, body: UpdateSparkBody, headers: IfMatchHeaders }, config: { operation: 'sparks.updateSpark', etag: true } }, async (request, reply) => {
      const expectedVersion = expectedVersionOf(request.headers['if-match'])
      const spark = await core.sparks.update(actorOf(request), { ...request.body, sparkId: request.params.sparkId, expectedVersion })
      return withEtag(reply, spark)
    })

    r.patch('/:sparkId/position', { schema: { summary: 'Move a spark on the canvas', tags: ['sparks'], response: ok(SparkMove), params: SparkIdParams, body: MoveSparkBody }, config: { operation: 'sparks.moveSpark' } }, async (request) => {
      return { data: await core.sparks.move(actorOf(request), { ...request.body, sparkId: request.params.sparkId }) }
    })

    r.delete('/:sparkId', { schema: { summary: 'Delete a spark', tags: ['sparks'], response: noContent, params: SparkIdParams }, config: { operation: 'sparks.deleteSpark' } }, async (request, reply) => {
      await core.sparks.delete(actorOf(request), request.params)
      return await reply.code(204).send()
    })
  }
}
