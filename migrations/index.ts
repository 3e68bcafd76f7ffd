// The explicit, ordered list of migrations. Names are ISO timestamps; append, never reorder.
import type { Migration } from 'kysely'
import * as usersAndSessions from './2026-11-22T00-00-00_users_and_sessions.js'
import * as roomsSparksMembers from './2026-11-22T22-10-00_rooms_sparks_members.js'
import * as eventLog from './2026-11-22T22-30-00_event_log.js'
import * as eventLogPositions from './2026-11-25T12-00-00_event_log_positions.js'
import * as offices from './2026-11-25T15-00-00_offices.js'
import * as usersSearch from './2026-11-25T16-30-00_users_search.js'
import * as uploads from './2026-11-25T17-00-00_uploads.js'
import * as rtcUidClaims from './2026-11-26T12-00-00_rtc_uid_claims.js'
import * as usersSearchKey from './2026-11-26T12-10-00_users_search_key.js'
import * as shelvesPassport from './2026-11-26T12-20-00_shelves_passport.js'
import * as sparksFillfactor from './2026-11-27T12-00-00_sparks_fillfactor.js'
import * as storageBoundsAndInviteSends from './2026-11-28T01-00-00_storage_bounds_and_invite_sends.js'
import * as trustAndSafety from './2026-11-28T02-00-00_trust_and_safety.js'
import * as adminAuditLog from './2026-11-28T05-00-00_admin_audit_log.js'
import * as idempotencyKeys from './2026-11-28T06-00-00_idempotency_keys.js'
import * as accountDeletionMarker from './2026-11-28T07-00-00_account_deletion_marker.js'
import * as idempotencyOutcomes from './2026-11-28T08-00-00_idempotency_outcomes.js'
import * as messageLinks from './2026-11-28T09-00-00_message_links.js'
import * as retentionIndexes from './2026-11-28T09-10-00_retention_indexes.js'

export const migrations: Record<string, Migration> = {
  '2026-11-22T00-00-00_users_and_sessions': usersAndSessions,
  '2026-11-22T22-10-00_rooms_sparks_members': roomsSparksMembers,
  '2026-11-22T22-30-00_event_log': eventLog,
  '2026-11-25T12-00-00_event_log_positions': eventLogPositions,
  '2026-11-25T15-00-00_offices': offices,
  '2026-11-25T16-30-00_users_search': usersSearch,
  '2026-11-25T17-00-00_uploads': uploads,
  '2026-11-26T12-00-00_rtc_uid_claims': rtcUidClaims,
  '2026-11-26T12-10-00_users_search_key': usersSearchKey,
  '2026-11-26T12-20-00_shelves_passport': shelvesPassport,
  '2026-11-27T12-00-00_sparks_fillfactor': sparksFillfactor,
  '2026-11-28T01-00-00_storage_bounds_and_invite_sends': storageBoundsAndInviteSends,
  '2026-11-28T02-00-00_trust_and_safety': trustAndSafety,
  '2026-11-28T05-00-00_admin_audit_log': adminAuditLog,
  '2026-11-28T06-00-00_idempotency_keys': idempotencyKeys,
  '2026-11-28T07-00-00_account_deletion_marker': accountDeletionMarker,
  '2026-11-28T08-00-00_idempotency_outcomes': idempotencyOutcomes,
  '2026-11-28T09-00-00_message_links': messageLinks,
  '2026-11-28T09-10-00_retention_indexes': retentionIndexes
}
