// The passport (a professional profile, DECISIONS §10) as both transports return it, its bounds, and
// the input schemas of passport operations, shared by REST (route schemas) and RPC (core validation).
import type { Selectable } from 'kysely'
import { Type } from 'typebox'
import type { PassportExperienceTable, PassportSkillsTable } from '../../db/schema.js'

export interface Skill {
  id: string
  name: string
  /** 1–5, or null when not given. */
  level: number | null
}

export interface Experience {
  id: string
  title: string
  company: string
  /** YYYY-MM */
  startDate: string
  /** YYYY-MM, or null while the position is current. */
  endDate: string | null
  description: string
}

export interface Passport {
  userId: string
  headline: string
  summary: string
  location: string
  isPublic: boolean
  skills: Skill[]
  experience: Experience[]
  updatedAt: string
}

/** The bounds of one passport: a profile a person reads, and what an import may add at most. */
export const SKILLS_MAX = 100
export const EXPERIENCE_MAX = 50
export const SKILL_NAME_MAX = 64
export const HEADLINE_MAX = 200
export const SUMMARY_MAX = 2000
export const LOCATION_MAX = 100
export const EXPERIENCE_TITLE_MAX = 200
export const COMPANY_MAX = 200
export const EXPERIENCE_DESCRIPTION_MAX = 2000

const UserId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty user id' })
const SkillId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty skill id' })
const ExperienceId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty experience id' })

const Headline = Type.String({ maxLength: HEADLINE_MAX, errorMessage: `must be a string of at most ${HEADLINE_MAX} characters` })
const Summary = Type.String({ maxLength: SUMMARY_MAX, errorMessage: `must be a string of at most ${SUMMARY_MAX} characters` })
const Location = Type.String({ maxLength: LOCATION_MAX, errorMessage: `must be a string of at most ${LOCATION_MAX} characters` })
const IsPublic = Type.Boolean({ errorMessage: 'must be true or false' })
const SkillName = Type.String({ minLength: 1, maxLength: SKILL_NAME_MAX, pattern: '\\S', errorMessage: `must be a string of 1 to ${SKILL_NAME_MAX} characters, not only spaces` })
const Level = Type.Integer({ minimum: 1, maximum: 5, errorMessage: 'must be an integer from 1 to 5' })
const Title = Type.String({ minLength: 1, maxLength: EXPERIENCE_TITLE_MAX, pattern: '\\S', errorMessage: `must be a string of 1 to ${EXPERIENCE_TITLE_MAX} characters, not only spaces` })
const Company = Type.String({ minLength: 1, maxLength: COMPANY_MAX, pattern: '\\S', errorMessage: `must be a string of 1 to ${COMPANY_MAX} characters, not only spaces` })
/** A month, YYYY-MM (years 1900–2100). Fixed length, so the pattern runs in constant time. */
const MONTH_PATTERN = '^(19|20)[0-9]{2}-(0[1-9]|1[0-2])$|^2100-(0[1-9]|1[0-2])$'
const Month = Type.String({ minLength: 7, maxLength: 7, pattern: MONTH_PATTERN, errorMessage: 'must be a month written YYYY-MM (1900-01 to 2100-12)' })
/** On an update, an empty string clears the end date (the position is current again). */
const EndDateOrEmpty = Type.Union([Month, Type.Literal('')], { errorMessage: 'must be a month written YYYY-MM (1900-01 to 2100-12), or empty for a current position' })
const Description = Type.String({ maxLength: EXPERIENCE_DESCRIPTION_MAX, errorMessage: `must be a string of at most ${EXPERIENCE_DESCRIPTION_MAX} characters` })

export const PassportUserParams = Type.Object({ userId: UserId })
/** No `userId`: the caller's own. */
export const GetPassportInput = Type.Object({ userId: Type.Optional(UserId) }, { additionalProperties: false })
export const SkillIdParams = Type.Object({ skillId: SkillId })
export const ExperienceIdParams = Type.Object({ experienceId: ExperienceId })

export const UpdatePassportInput = Type.Object({
  headline: Type.Optional(Headline),
  summary: Type.Optional(Summary),
  location: Type.Optional(Location),
  isPublic: Type.Optional(IsPublic)
}, { additionalProperties: false })

export const AddSkillInput = Type.Object({ name: SkillName, level: Type.Optional(Level) }, { additionalProperties: false })

export const AddExperienceInput = Type.Object({
  title: Title,
  company: Company,
  startDate: Month,
  endDate: Type.Optional(Month),
  description: Type.Optional(Description)
}, { additionalProperties: false })

export const UpdateExperienceBody = Type.Object({
  title: Type.Optional(Title),
  company: Type.Optional(Company),
  startDate: Type.Optional(Month),
  endDate: Type.Optional(EndDateOrEmpty),
  description: Type.Optional(Description)
}, { additionalProperties: false })
export const UpdateExperienceInput = Type.Object({ experienceId: ExperienceId, ...UpdateExperienceBody.properties }, { additionalProperties: false })

/** How a skill name is compared: Unicode-normalised (NFKC), lower case, inner blanks collapsed. */
export function skillKey (name: string): string {
  return name.normalize('NFKC').toLowerCase().trim().replace(/\s+/g, ' ')
}

export function toSkill (row: Selectable<PassportSkillsTable>): Skill {
  return { id: row.id, name: row.name, level: row.level }
}

export function toExperience (row: Selectable<PassportExperienceTable>): Experience {
  return {
    id: row.id,
    title: row.title,
    company: row.company,
    startDate: row.start_date,
    endDate: row.end_date,
    description: row.description
  }
}
