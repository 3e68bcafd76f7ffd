// app.passport.v1.PassportService: message ↔ core mapping only. The core's "not given" is null
// (a skill's level, a current position's end date); in the messages such a field is left unset.
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import type { Experience, Passport, Skill } from '../core/passport/passport.types.js'
import { PassportService } from '../gen/app/passport/v1/passport_pb.js'
import { actorOf } from './context.js'
import { idempotentCall } from './idempotency.js'

function skillMessage (skill: Skill): Omit<Skill, 'level'> & { level?: number } {
  return { id: skill.id, name: skill.name, ...(skill.level === null ? {} : { level: skill.level }) }
}

function experienceMessage (entry: Experience): Omit<Experience, 'endDate'> & { endDate?: string } {
  const { endDate, ...rest } = entry
  return { ...rest, ...(endDate === null ? {} : { endDate }) }
}

function passportMessage (passport: Passport) {
  return { ...passport, skills: passport.skills.map(skillMessage), experience: passport.experience.map(experienceMessage) }
}

export function passportService (core: Core): ServiceImpl<typeof PassportService> {
  const { passports } = core
  return {
    async getPassport (req, ctx) {
      return { passport: passportMessage(await passports.get(actorOf(ctx), { userId: req.userId })) }
    },
    async updatePassport (req, ctx) {
      return { passport: passportMessage(await passports.update(actorOf(ctx), { headline: req.headline, summary: req.summary, location: req.location, isPublic: req.isPublic })) }
    },
    async importCV (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ passport: passportMessage(await passports.importCv(actorOf(ctx), { bytes: req.content, field: 'content', filename: req.filename })) }))
    },
    async addSkill (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ skill: skillMessage(await passports.addSkill(actorOf(ctx), { name: req.name, level: req.level })) }))
    },
    async removeSkill (req, ctx) {
      await passports.removeSkill(actorOf(ctx), { skillId: req.skillId })
      return {}
    },
    async addExperience (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ experience: experienceMessage(await passports.addExperience(actorOf(ctx), { title: req.title, company: req.company, startDate: req.startDate, endDate: req.endDate, description: req.description })) }))
    },
    async updateExperience (req, ctx) {
      return {
        experience: experienceMessage(await passports.updateExperience(actorOf(ctx), {
          experienceId: req.experienceId, title: req.title, company: req.company, startDate: req.startDate, endDate: req.endDate, description: req.description
        }))
      }
    },
    async deleteExperience (req, ctx) {
      await passports.deleteExperience(actorOf(ctx), { experienceId: req.experienceId })
      return {}
    }
  }
}
