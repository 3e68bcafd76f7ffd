// Passport operations (DECISIONS §10): a user's professional profile, its skills and experience, and
// CV import. Everyone has a passport: a user who never wrote one has an empty, private one, whose
// row is created by their first write. Visibility: one's own always; another user's only when they
// made it public (else 404, so a private passport cannot be told from a missing user). Every write
// locks the passport row first, so concurrent writes to one passport run one at a time and its
// bounds (SKILLS_MAX, EXPERIENCE_MAX) hold. Passports publish no events (SPEC names none).
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, PayloadTooLargeError, notFound, unreadableFile, validationError } from '../errors.js'
import { inTransaction } from '../transaction.js'
import { keyed, ONE_TRANSACTION } from '../idempotency/keyed-call.js'
import { parseInput } from '../validation.js'
import type { Db } from '../../db/database.js'
import { newId } from '../../infra/ids.js'
import { CV_MAX_BYTES, type CvPreview } from './cv.types.js'
import * as repo from './passport.repository.js'
import {
  AddExperienceInput, AddSkillInput, EXPERIENCE_MAX, ExperienceIdParams, GetPassportInput, SKILLS_MAX, SkillIdParams, UpdateExperienceInput, UpdatePassportInput,
  skillKey, toExperience, toSkill, type Experience, type Passport, type Skill
} from './passport.types.js'

const SKILL_CONSTRAINT = 'passport_skills_user_name'

/** A CV as the transports hand it over: its bytes, and the field that carried it (for messages). */
export interface CvFile {
  bytes: Uint8Array
  /** `file` (REST form) or `content` (RPC). */
  field: string
  /** The client's name for it: a label only, never used to judge the type. */
  filename?: string
}

const FILENAME_MAX = 255

async function readPassport (db: Db, userId: string): Promise<Passport | undefined> {
  const { passport, userCreatedAt } = await repo.findPassport(db, userId)
  if (userCreatedAt === undefined) return undefined
  const [skills, experience] = [await repo.skillsOf(db, userId), await repo.experienceOf(db, userId)]
  return {
    userId,
    headline: passport?.headline ?? '',
    summary: passport?.summary ?? '',
    location: passport?.location ?? '',
    isPublic: passport?.is_public ?? false,
    skills: skills.map(toSkill),
    experience: experience.map(toExperience),
    updatedAt: (passport?.updated_at ?? userCreatedAt).toISOString()
  }
}

function checkDates (startDate: string, endDate: string | null): void {
  if (endDate !== null && endDate < startDate) throw validationError('endDate', `must not be before startDate (${startDate})`)
}

function skillLimit (): AppError {
  return new AppError('limit_reached', `A passport holds at most ${SKILLS_MAX} skills; remove one before adding another.`)
}

function experienceLimit (): AppError {
  return new AppError('limit_reached', `A passport holds at most ${EXPERIENCE_MAX} experience entries; delete one before adding another.`)
}

export function createPassports (deps: CoreDeps) {
  const { db, clock, compute } = deps

  /** The CV's preview, parsed in a child process under a memory limit (src/compute); a file that
   *  cannot be read (its type, encrypted, damaged, a bomb, past the parse's memory or time) is 400
   *  `UnreadableFile` naming its field. */
  async function preview (file: CvFile): Promise<CvPreview> {
    if (file.filename !== undefined && file.filename.length > FILENAME_MAX) throw validationError('filename', `must be at most ${FILENAME_MAX} characters`)
    if (file.bytes.byteLength > CV_MAX_BYTES) throw new PayloadTooLargeError(file.field, `must be at most ${CV_MAX_BYTES / 1024 / 1024} MiB (it is ${file.bytes.byteLength} bytes)`)
    if (file.bytes.byteLength === 0) throw validationError(file.field, 'is empty')
    const result = await compute.parseCv(file.bytes)
    if (!result.ok) throw unreadableFile(file.field, result.reason)
    return result.preview
  }

  async function own (userId: string): Promise<Passport> {
    const passport = await readPassport(db, userId)
    if (passport === undefined) throw notFound('Passport')
    return passport
  }

  return {
    /** The caller's own passport, or with `userId` another user's, when public. */
    async get (actor: Actor, input: unknown): Promise<Passport> {
      const { userId = actor.userId } = parseInput(GetPassportInput, input)
      const passport = await readPassport(db, userId)
      if (passport === undefined || (userId !== actor.userId && !passport.isPublic)) throw notFound('Passport')
      return passport
    },

    async update (actor: Actor, input: unknown): Promise<Passport> {
      const patch = parseInput(UpdatePassportInput, input)
      if (Object.keys(patch).length === 0) throw validationError('(body)', 'must contain at least one of headline, summary, location, isPublic')
      await inTransaction(deps, async ({ trx }) => {
        const now = clock.now()
        await repo.lockPassport(trx, actor.userId, now)
        await repo.updatePassportRow(trx, actor.userId, patch, now)
      })
      return await own(actor.userId)
    },

    /** A skill name is unique per passport, case-insensitively (409 / ALREADY_EXISTS). */
    addSkill: keyed(deps, async (actor: Actor, input: unknown): Promise<Skill> => {
      const { name, level } = parseInput(AddSkillInput, input)
      const trimmed = name.trim()
      try {
        return await inTransaction(deps, async ({ trx }) => {
          const now = clock.now()
          await repo.lockPassport(trx, actor.userId, now)
          if (await repo.countSkills(trx, actor.userId) >= SKILLS_MAX) throw skillLimit()
          const skill = toSkill(await repo.insertSkill(trx, { id: newId('skill'), userId: actor.userId, name: trimmed, nameKey: skillKey(trimmed), level: level ?? null, now }))
          await repo.touchPassport(trx, actor.userId, now)
          return skill
        })
      } catch (error) {
        if (repo.isUniqueViolation(error, SKILL_CONSTRAINT)) throw new AppError('conflict', `The passport already has the skill "${trimmed}".`)
        throw error
      }
    }, ONE_TRANSACTION),

    async removeSkill (actor: Actor, input: unknown): Promise<void> {
      const { skillId } = parseInput(SkillIdParams, input)
      await inTransaction(deps, async ({ trx }) => {
        const now = clock.now()
        await repo.lockPassport(trx, actor.userId, now)
        if (!await repo.deleteSkill(trx, actor.userId, skillId)) throw notFound('Skill')
        await repo.touchPassport(trx, actor.userId, now)
      })
    },

    addExperience: keyed(deps, async (actor: Actor, input: unknown): Promise<Experience> => {
      const entry = parseInput(AddExperienceInput, input)
      checkDates(entry.startDate, entry.endDate ?? null)
      return await inTransaction(deps, async ({ trx }) => {
        const now = clock.now()
        await repo.lockPassport(trx, actor.userId, now)
        if (await repo.countExperience(trx, actor.userId) >= EXPERIENCE_MAX) throw experienceLimit()
        const row = await repo.insertExperience(trx, {
          id: newId('exp'), userId: actor.userId, now, title: entry.title, company: entry.company, startDate: entry.startDate, endDate: entry.endDate ?? null, description: entry.description ?? ''
        })
        await repo.touchPassport(trx, actor.userId, now)
        return toExperience(row)
      })
    }, ONE_TRANSACTION),

    /** Any of the fields; `endDate: ""` makes the position current again. Dates are checked as they end up. */
    async updateExperience (actor: Actor, input: unknown): Promise<Experience> {
      const { experienceId, ...patch } = parseInput(UpdateExperienceInput, input)
      if (Object.keys(patch).length === 0) throw validationError('(body)', 'must contain at least one of title, company, startDate, endDate, description')
      return await inTransaction(deps, async ({ trx }) => {
        const now = clock.now()
        await repo.lockPassport(trx, actor.userId, now)
        const current = await repo.findExperience(trx, actor.userId, experienceId)
        if (current === undefined) throw notFound('Experience')
        const next = {
          title: patch.title ?? current.title,
          company: patch.company ?? current.company,
          startDate: patch.startDate ?? current.start_date,
          endDate: patch.endDate === undefined ? current.end_date : patch.endDate === '' ? null : patch.endDate,
          description: patch.description ?? current.description
        }
        checkDates(next.startDate, next.endDate)
        const row = await repo.updateExperienceRow(trx, experienceId, next)
        await repo.touchPassport(trx, actor.userId, now)
        return toExperience(row)
      })
    },

    async deleteExperience (actor: Actor, input: unknown): Promise<void> {
      const { experienceId } = parseInput(ExperienceIdParams, input)
      await inTransaction(deps, async ({ trx }) => {
        const now = clock.now()
        await repo.lockPassport(trx, actor.userId, now)
        if (!await repo.deleteExperience(trx, actor.userId, experienceId)) throw notFound('Experience')
        await repo.touchPassport(trx, actor.userId, now)
      })
    },

    /** What a CV holds, changing nothing. */
    async parseCv (_actor: Actor, file: CvFile): Promise<CvPreview> {
      return await preview(file)
    },

    /**
     * Parses a CV and merges it into the caller's passport in one transaction: skills not already
     * there (case-insensitively) are added, and experience entries with a title, a company and a
     * start date are added, each up to the passport's bounds (what would pass them is left out);
     * a headline is taken only when the passport has none. Answers the passport.
     */
    importCv: keyed(deps, async (actor: Actor, file: CvFile): Promise<Passport> => {
      const found = await preview(file)
      await inTransaction(deps, async ({ trx }) => {
        const now = clock.now()
        const passport = await repo.lockPassport(trx, actor.userId, now)
        const have = new Set((await repo.skillsOf(trx, actor.userId)).map((s) => s.name_key))
        let skillRoom = SKILLS_MAX - have.size
        // Skills list in the order they were added (created_at): a millisecond apart keeps the CV's order.
        let at = now.getTime()
        for (const name of found.skills) {
          const key = skillKey(name)
          if (have.has(key) || skillRoom <= 0) continue
          await repo.insertSkill(trx, { id: newId('skill'), userId: actor.userId, name, nameKey: key, level: null, now: new Date(++at) })
          have.add(key)
          skillRoom--
        }
        let experienceRoom = EXPERIENCE_MAX - await repo.countExperience(trx, actor.userId)
        for (const entry of found.experience) {
          if (entry.company === '' || experienceRoom <= 0) continue
          await repo.insertExperience(trx, { ...entry, id: newId('exp'), userId: actor.userId, now })
          experienceRoom--
        }
        const headline = passport.headline === '' && found.headline !== undefined ? { headline: found.headline } : {}
        await repo.updatePassportRow(trx, actor.userId, headline, now)
      })
      return await own(actor.userId)
    })
  }
}

export type Passports = ReturnType<typeof createPassports>
