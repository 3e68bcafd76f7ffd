// Unknown paths answer JSON 404; a known path with the wrong method answers JSON 405 with `Allow`
// (in the REST envelope: /rpc has its own not-found handler).
import type { FastifyInstance } from 'fastify'
import type { RefusalWriter } from './refusals.js'

export function installNotFound (app: FastifyInstance, write: RefusalWriter): void {
  const routes: Array<{ method: string, pattern: RegExp }> = []
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    const source = route.url
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:[^/]+/g, '[^/]+')
      .replace(/\*/g, '.*')
    for (const method of methods) routes.push({ method: method.toUpperCase(), pattern: new RegExp(`^${source}/?$`) })
  })
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    const allowed = [...new Set(routes.filter((r) => r.method !== 'OPTIONS' && r.pattern.test(path)).map((r) => r.method))]
    const refusal = allowed.length > 0 && !allowed.includes(request.method)
      ? write('method_not_allowed', `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}`)
      : write('route_not_found', `No route for ${request.method} ${path}`)
    if (refusal.status === 405) void reply.header('allow', allowed.join(', '))
    return await reply.code(refusal.status).type(refusal.contentType).send(refusal.body)
  })
}
