import { sql } from 'kysely'
import type { Db } from '../../db/database.js'

/**
 * Claims `uid` in `channel` for `userId` until `expiresAt`: true when it was free, expired, or
 * already this user's (whose claim then lasts to the new expiry); false when another user holds it.
 * One statement: of two users claiming a free uid at once, the primary key admits one insert, and
 * the other's conflict sees the committed claim, which is not theirs.
 */
export async function claimUid (db: Db, claim: { channel: string, uid: number, userId: string, now: Date, expiresAt: Date }): Promise<boolean> {
  const row = await db.insertInto('rtc_uid_claims')
    .values({ channel_name: claim.channel, uid: claim.uid, user_id: claim.userId, expires_at: claim.expiresAt })
    .onConflict((oc) => oc.columns(['channel_name', 'uid'])
      .doUpdateSet({ user_id: claim.userId, expires_at: sql<Date>`greatest(rtc_uid_claims.expires_at, excluded.expires_at)` })
      .where((eb) => eb.or([eb('rtc_uid_claims.user_id', '=', claim.userId), eb('rtc_uid_claims.expires_at', '<=', claim.now)])))
    .returning('user_id')
    .executeTakeFirst()
  return row !== undefined
}

/** Drops a channel's expired claims, so a channel keeps no more rows than the uids in use in it. */
export async function dropExpiredClaims (db: Db, channel: string, now: Date): Promise<void> {
  await db.deleteFrom('rtc_uid_claims').where('channel_name', '=', channel).where('expires_at', '<=', now).execute()
}
