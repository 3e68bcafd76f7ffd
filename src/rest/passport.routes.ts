// /api/passport and /api/cv/parse (DECISIONS §10): the caller's professional profile, another user's
// public one, skills, experience, and CV files (multipart `file`, read whole: at most 5 MiB).
// Parse → one core call → `{ data }`.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { CV_MAX_BYTES } from '../core/passport/cv.types.js'
import {
  AddExperienceInput, AddSkillInput, ExperienceIdParams, PassportUserParams, SkillIdParams, UpdateExperienceBody, UpdatePassportInput
} from '../core/passport/passport.types.js'
import { actorOf } from './identity.js'
import { CvPreview, Experience, Passport, Skill, created, noContent, ok } from './responses.js'
import { acceptMultipart, fileForm, readFormFile } from './upload-form.js'

/** What a CV may be: PDF, DOCX or plain text, told by its bytes. */
const CV_FORM = fileForm(CV_MAX_BYTES, 'The CV: PDF, DOCX or plain text', ['application/pdf', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'text/plain'])

export function passportRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { passports } = core

    r.get('/', { schema: { summary: "A passport (yours, or a user's)", tags: ['passport'], response: ok(Passport) }, config: { operation: 'passport.getPassport' } }, async (request) => {
      return { data: await passports.get(actorOf(request), {}) }
    })

    r.patch('/', { schema: { summary: 'Update your passport', tags: ['passport'], response: ok(Passport), body: UpdatePassportInput }, config: { operation: 'passport.updatePassport' } }, async (request) => {
      return { data: await passports.update(actorOf(request), request.body) }
    })

    r.post('/skills', { schema: { summary: 'Add a skill', tags: ['passport'], response: created(Skill), body: AddSkillInput }, config: { operation: 'passport.addSkill', idempotent: true } }, async (request, reply) => {
      return await reply.code(201).send({ data: await passports.addSkill(actorOf(request), request.body) })
    })

    r.delete('/skills/:skillId', { schema: { summary: 'Remove a skill', tags: ['passport'], response: noContent, params: SkillIdParams }, config: { operation: 'passport.removeSkill' } }, async (request, reply) => {
      await passports.removeSkill(actorOf(request), request.params)
      return await reply.code(204).send()
    })

    r.post('/experience', { schema: { summary: 'Add an experience', tags: ['passport'], response: created(Experience), body: AddExperienceInput }, config: { operation: 'passport.addExperience', idempotent: true } }, async (request, reply) => {
      return await reply.code(201).send({ data: await passports.addExperience(actorOf(request), request.body) })
    })

    r.patch('/experience/:experienceId', { schema: { summary: 'Update an experience', tags: ['passport'], response: ok(Experience), params: ExperienceIdParams, body: UpdateExperienceBody }, config: { operation: 'passport.updateExperience' } }, async (request) => {
      return { data: await passports.updateExperience(actorOf(request), { ...request.body, experienceId: request.params.experienceId }) }
    })

    r.delete('/experience/:experienceId', { schema: { summary: 'Delete an experience', tags: ['passport'], response: noContent, params: ExperienceIdParams }, config: { operation: 'passport.deleteExperience' } }, async (request, reply) => {
      await passports.deleteExperience(actorOf(request), request.params)
      return await reply.code(204).send()
    })

    r.get('/:userId', { schema: { summary: "A passport (yours, or a user's)", tags: ['passport'], response: ok(Passport), params: PassportUserParams }, config: { operation: 'passport.getPassport' } }, async (request) => {
      return { data: await passports.get(actorOf(request), request.params) }
    })

    // Its own scope: only this route reads multipart bodies.
    await app.register(async (form) => {
      await acceptMultipart(form)
      form.post('/import', { schema: { summary: 'Import a CV (multipart `file`: PDF, DOCX or text) into your passport', tags: ['passport'], body: CV_FORM, response: ok(Passport) }, config: { operation: 'passport.importCV', idempotent: true } }, async (request, reply) => {
        const actor = actorOf(request)
        const { bytes } = await readFormFile(request, reply, CV_MAX_BYTES)
        return { data: await passports.importCv(actor, { bytes, field: 'file' }) }
      })
    })
  }
}

/** `POST /api/cv/parse`: a CV's preview; changes nothing. */
export function cvRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    await acceptMultipart(app)
    app.post('/parse', { schema: { summary: 'Preview what a CV (multipart `file`) would import; changes nothing', tags: ['passport'], body: CV_FORM, response: ok(CvPreview) }, config: { operation: 'passport.parseCV' } }, async (request, reply) => {
      const actor = actorOf(request)
      const { bytes } = await readFormFile(request, reply, CV_MAX_BYTES)
      return { data: await core.passports.parseCv(actor, { bytes, field: 'file' }) }
    })
  }
}
