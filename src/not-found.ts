// Unknown paths answer JSON 404; a known path with the wrong method answers JSON 405 with `Allow`.
import type { FastifyInstance } from 'fastify'

export function installNotFound (app: FastifyInstance): void {
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
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      return await reply.code(405).header('allow', allowed.join(', '))
        .send({ error: 'MethodNotAllowed', message: `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}` })
    }
    return await reply.code(404).send({ error: 'NotFound', message: `No route for ${request.method} ${path}` })
  })
}
