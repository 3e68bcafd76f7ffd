// The REST API under /api: session-cookie auth, CORS for the one configured origin, one plugin per route group.
import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'
import type { Core } from '../core/index.js'
import { adminRoutes } from './admin.routes.js'
import { authRoutes } from './auth.routes.js'
import { canvasRoutes } from './canvas.routes.js'
import { cursorRoutes } from './cursor.routes.js'
import { presenceRoutes } from './presence.routes.js'
import { inviteRoutes } from './invites.routes.js'
import { officeRoutes } from './offices.routes.js'
import { cvRoutes, passportRoutes } from './passport.routes.js'
import { shelfRoutes } from './shelves.routes.js'
import { roomRoutes } from './rooms.routes.js'
import { sparkRoutes } from './sparks.routes.js'
import { syncRoutes, type SyncRouteOptions } from './sync.routes.js'
import { uploadRoutes } from './uploads.routes.js'
import type { Limiter } from '../ratelimit/limiter.js'
import { installRequestGate } from './request-gate.js'
import { installIdempotency } from './idempotency.js'
import { installHttpSemantics } from './http-semantics.js'
import { rtcRoutes } from './rtc.routes.js'
import { appealRoutes, classifyRoutes, messageRoutes, motdRoutes, reportRoutes, roomWidgetRoutes, widgetRoutes } from './safety.routes.js'
import { userRoutes } from './users.routes.js'
import { typeBoxValidatorCompiler } from './validation.js'

export interface RestOptions {
  core: Core
  config: Config
  /** Absent only when the app is built without a limiter (benchmark baseline). */
  limiter?: Limiter | undefined
  /** The event stream's hub and caps (src/live). */
  live: SyncRouteOptions
}

export async function restApi (app: FastifyInstance, { core, config, limiter, live }: RestOptions): Promise<void> {
  // DECISIONS §14: every method the API has and every request header it reads, for the one origin.
  await app.register(cors, {
    origin: config.corsOrigin,
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'If-Match', 'If-None-Match', 'Idempotency-Key', 'Last-Event-ID', 'X-Request-Id'],
    exposedHeaders: ['ETag', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id', 'Idempotent-Replayed', 'Location'],
    maxAge: 7200
  })
  app.setValidatorCompiler(typeBoxValidatorCompiler)
  installRequestGate(app, core, limiter)
  installIdempotency(app, core)
  installHttpSemantics(app)
  await app.register(authRoutes(core, config), { prefix: '/auth' })
  await app.register(roomRoutes(core), { prefix: '/rooms' })
  await app.register(roomWidgetRoutes(core), { prefix: '/rooms' })
  await app.register(sparkRoutes(core), { prefix: '/sparks' })
  await app.register(canvasRoutes(core), { prefix: '/canvas' })
  await app.register(cursorRoutes(core), { prefix: '/canvas' })
  await app.register(presenceRoutes(core), { prefix: '/canvas' })
  await app.register(officeRoutes(core), { prefix: '/offices' })
  await app.register(inviteRoutes(core), { prefix: '/invites' })
  await app.register(userRoutes(core), { prefix: '/users' })
  await app.register(rtcRoutes(core), { prefix: '/rtc' })
  await app.register(shelfRoutes(core), { prefix: '/shelves' })
  await app.register(passportRoutes(core), { prefix: '/passport' })
  await app.register(cvRoutes(core), { prefix: '/cv' })
  await app.register(reportRoutes(core), { prefix: '/reports' })
  await app.register(appealRoutes(core), { prefix: '/appeals' })
  await app.register(messageRoutes(core), { prefix: '/messages' })
  await app.register(motdRoutes(core), { prefix: '/motd' })
  await app.register(widgetRoutes(core), { prefix: '/widgets' })
  await app.register(classifyRoutes(core), { prefix: '/classify' })
  await app.register(syncRoutes(live), { prefix: '/sync' })
  await app.register(adminRoutes(core), { prefix: '/admin' })
  // /uploads and /attachments, in a scope of their own that reads multipart bodies only.
  await app.register(uploadRoutes(core))
}
