// All SQL of passports, their skills and experience.
import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { PassportExperienceTable, PassportSkillsTable, PassportsTable } from '../../db/schema.js'

export type PassportRow = Selectable<PassportsTable>
export type SkillRow = Selectable<PassportSkillsTable>
export type ExperienceRow = Selectable<PassportExperienceTable>

const UNIQUE_VIOLATION = '23505'

export function isUniqueViolation (error: unknown, constraint: string): boolean {
  const { code, constraint: violated } = error as { code?: unknown, constraint?: unknown }
  return code === UNIQUE_VIOLATION && violated === constraint
}

/** The user's passport row, if they ever wrote one; `userExists` tells an unknown user apart. */
export async function findPassport (db: Db, userId: string): Promise<{ passport: PassportRow | undefined, userCreatedAt: Date | undefined }> {
  const row = await db.selectFrom('users')
    .leftJoin('passports', 'passports.user_id', 'users.id')
    .select(['users.created_at as user_created_at', 'passports.user_id', 'passports.headline', 'passports.summary', 'passports.location', 'passports.is_public', 'passports.updated_at'])
    .where('users.id', '=', userId)
    .executeTakeFirst()
  if (row === undefined) return { passport: undefined, userCreatedAt: undefined }
  const { user_created_at: userCreatedAt, user_id: id, headline, summary, location, is_public: isPublic, updated_at: updatedAt } = row
  const passport = id === null || headline === null || summary === null || location === null || isPublic === null || updatedAt === null
    ? undefined
    : { user_id: id, headline, summary, location, is_public: isPublic, updated_at: updatedAt }
  return { passport, userCreatedAt }
}

/** The caller's passport row, created empty if need be, locked until the transaction ends: writes
 *  to one passport run one at a time, so its counts stay true until commit. */
export async function lockPassport (db: Db, userId: string, now: Date): Promise<PassportRow> {
  await db.insertInto('passports').values({ user_id: userId, headline: '', summary: '', location: '', is_public: false, updated_at: now })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute()
  return await db.selectFrom('passports').selectAll().where('user_id', '=', userId).forUpdate().executeTakeFirstOrThrow()
}

export async function updatePassportRow (db: Db, userId: string, patch: { headline?: string, summary?: string, location?: string, isPublic?: boolean }, now: Date): Promise<void> {
  await db.updateTable('passports')
    .set({
      ...(patch.headline === undefined ? {} : { headline: patch.headline }),
      ...(patch.summary === undefined ? {} : { summary: patch.summary }),
      ...(patch.location === undefined ? {} : { location: patch.location }),
      ...(patch.isPublic === undefined ? {} : { is_public: patch.isPublic }),
      updated_at: now
    })
    .where('user_id', '=', userId)
    .execute()
}

/** A passport changed through its skills or experience is updated too. */
export async function touchPassport (db: Db, userId: string, now: Date): Promise<void> {
  await db.updateTable('passports').set({ updated_at: now }).where('user_id', '=', userId).execute()
}

/** Skills in the order they were added. */
export async function skillsOf (db: Db, userId: string): Promise<SkillRow[]> {
  return await db.selectFrom('passport_skills').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute()
}

/** Experience, most recent first. */
export async function experienceOf (db: Db, userId: string): Promise<ExperienceRow[]> {
  return await db.selectFrom('passport_experience').selectAll().where('user_id', '=', userId)
    .orderBy(sql`end_date is null`, 'desc').orderBy('end_date', 'desc').orderBy('start_date', 'desc').orderBy('created_at').orderBy('id')
    .execute()
}

export async function countSkills (db: Db, userId: string): Promise<number> {
  const { n } = await db.selectFrom('passport_skills').select(sql<number>`count(*)::int`.as('n')).where('user_id', '=', userId).executeTakeFirstOrThrow()
  return n
}

export async function countExperience (db: Db, userId: string): Promise<number> {
  const { n } = await db.selectFrom('passport_experience').select(sql<number>`count(*)::int`.as('n')).where('user_id', '=', userId).executeTakeFirstOrThrow()
  return n
}

export async function insertSkill (db: Db, skill: { id: string, userId: string, name: string, nameKey: string, level: number | null, now: Date }): Promise<SkillRow> {
  return await db.insertInto('passport_skills').values({
    id: skill.id, user_id: skill.userId, name: skill.name, name_key: skill.nameKey, level: skill.level, created_at: skill.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function deleteSkill (db: Db, userId: string, skillId: string): Promise<boolean> {
  const deleted = await db.deleteFrom('passport_skills').where('id', '=', skillId).where('user_id', '=', userId).returning('id').executeTakeFirst()
  return deleted !== undefined
}

export interface NewExperience { title: string, company: string, startDate: string, endDate: string | null, description: string }

export async function insertExperience (db: Db, entry: NewExperience & { id: string, userId: string, now: Date }): Promise<ExperienceRow> {
  return await db.insertInto('passport_experience').values({
    id: entry.id,
    user_id: entry.userId,
    title: entry.title,
    company: entry.company,
    start_date: entry.startDate,
    end_date: entry.endDate,
    description: entry.description,
    created_at: entry.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function findExperience (db: Db, userId: string, experienceId: string): Promise<ExperienceRow | undefined> {
  return await db.selectFrom('passport_experience').selectAll().where('id', '=', experienceId).where('user_id', '=', userId).executeTakeFirst()
}

export async function updateExperienceRow (db: Db, experienceId: string, entry: NewExperience): Promise<ExperienceRow> {
  return await db.updateTable('passport_experience')
    .set({ title: entry.title, company: entry.company, start_date: entry.startDate, end_date: entry.endDate, description: entry.description })
    .where('id', '=', experienceId)
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function deleteExperience (db: Db, userId: string, experienceId: string): Promise<boolean> {
  const deleted = await db.deleteFrom('passport_experience').where('id', '=', experienceId).where('user_id', '=', userId).returning('id').executeTakeFirst()
  return deleted !== undefined
}
