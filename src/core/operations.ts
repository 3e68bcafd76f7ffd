// The catalogue: every operation of the service once, with who may call it (its access class, SPEC
// Authentication) and the rate-limit tier it is counted in (SPEC Limits). Both transports and the
// admission gate (src/http/admission.ts) read it, and the app refuses to start with a REST route or an
// RPC method that names no entry here. An RPC method's operation is `<domain>.<method>`
// (app.rooms.v1.RoomsService/GetRoom is `rooms.getRoom`); a REST route names its operation in its
// config, the RPC one where both transports offer it, so the two cannot disagree. Where SPEC makes
// the transports differ, the entry gives each its own access class (`accessOn` reads it), and
// it names the refusals of its own the operation may give (`refusals`).
import type { ErrorKind } from './errors.js'

/** public: no identity needed; optional: identity used when valid; required: refused without it;
 *  admin / super_admin: an access token of the OIDC provider with that role, never a session
 *  (DECISIONS §12), counted in its tier under the token's `sub`. */
export type Access = 'public' | 'optional' | 'required' | 'admin' | 'super_admin'

export type Transport = 'rest' | 'rpc'

/** An access class for each transport, where SPEC makes them differ. */
export interface AccessByTransport {
  readonly rest: Access
  readonly rpc: Access
}

/** SPEC Limits' tiers; `exempt` is never counted. */
export type Tier = 'exempt' | 'strict' | 'expensive' | 'upload' | 'canvas' | 'write' | 'read' | 'standard'

export interface OperationPolicy {
  /** One class for both transports, or one for each where SPEC makes them differ. */
  readonly access: Access | AccessByTransport
  readonly tier: Tier
  /**
   * The refusals of its own the core may answer (a taken slug, a limit reached, an id in the body
   * that names nothing), beyond those that follow from the entry and the route: every operation's
   * `validation` and `unavailable`, its access class's (`unauthenticated`, `suspended`, `forbidden`),
   * its tier's `rate_limited`, and `not_found` for an id in a REST path. The OpenAPI document
   * declares each answer from them (src/rest/openapi-responses.ts).
   */
  readonly refusals: readonly ErrorKind[]
}

const publicIn = (tier: Tier, ...refusals: ErrorKind[]): OperationPolicy => ({ access: 'public', tier, refusals })
const optionalIn = (tier: Tier, ...refusals: ErrorKind[]): OperationPolicy => ({ access: 'optional', tier, refusals })
/** REST only (DECISIONS §12): `/api/admin/*`; the RPC gateway has no admin methods. */
const adminIn = (tier: Tier, ...refusals: ErrorKind[]): OperationPolicy => ({ access: 'admin', tier, refusals })
const superAdminIn = (tier: Tier, ...refusals: ErrorKind[]): OperationPolicy => ({ access: 'super_admin', tier, refusals })
const requiredIn = (tier: Tier, ...refusals: ErrorKind[]): OperationPolicy => ({ access: 'required', tier, refusals })
/** SPEC's Optional class is the RPC gateway's (DECISIONS §16): anonymous ListRooms / ListOffices see
 *  the public ones, while REST needs the session for every route but the public ones. */
const optionalOnRpcIn = (tier: Tier, ...refusals: ErrorKind[]): OperationPolicy => ({ access: { rest: 'required', rpc: 'optional' }, tier, refusals })

/** The access class of an operation's entry on one transport. */
export function accessOn (policy: OperationPolicy, transport: Transport): Access {
  return typeof policy.access === 'string' ? policy.access : policy.access[transport]
}

export const OPERATIONS = {
  /** `GET /health`, and gRPC's `grpc.health.v1.Health/Check`, which reports the same state. */
  'health.check': publicIn('exempt'),
  /** RPC only: `grpc.health.v1.Health/Watch`, the same state as it changes (DECISIONS §17). */
  'health.watch': publicIn('exempt'),
  /** RPC only: gRPC server reflection, v1 and v1alpha (DECISIONS §17): what `grpcurl list` reads. */
  'reflection.serverReflectionInfo': publicIn('exempt'),

  'auth.requestLogin': publicIn('strict'),
  'auth.pollLoginStatus': publicIn('standard', 'invalid_token'),
  'auth.getAuthorizeInfo': publicIn('read', 'invalid_token'),
  'auth.authorizeLogin': publicIn('standard', 'invalid_token'),
  /** REST only: the mailed link opened in a browser (sets the session cookie). */
  'auth.openSignInLink': publicIn('standard', 'invalid_token'),
  'auth.getMe': requiredIn('read'),
  // Authenticated by the refresh token itself, so an expired access token does not lock a client out.
  'auth.refreshToken': publicIn('standard', 'unauthenticated', 'session_expired'),
  'auth.logout': requiredIn('standard'),
  'auth.requestDeletion': requiredIn('strict'),
  'auth.confirmDeletion': publicIn('strict', 'invalid_token'),
  'auth.getConfig': publicIn('read'),
  'auth.ping': publicIn('standard'),

  'rooms.listRooms': optionalOnRpcIn('read'),
  'rooms.getRoom': requiredIn('read'),
  'rooms.createRoom': requiredIn('write'),
  'rooms.updateRoom': requiredIn('write'),
  'rooms.deleteRoom': requiredIn('write'),

  'sparks.listSparks': requiredIn('read', 'not_found'),
  'sparks.getSpark': requiredIn('read'),
  'sparks.createSpark': requiredIn('write', 'not_found', 'limit_reached'),
  'sparks.updateSpark': requiredIn('write', 'stale_version'),
  'sparks.deleteSpark': requiredIn('write'),
  'sparks.moveSpark': requiredIn('canvas'),

  'canvas.updatePosition': requiredIn('canvas', 'not_found'),
  'canvas.batchUpdatePositions': requiredIn('canvas', 'not_found'),
  'canvas.computeLayout': requiredIn('canvas', 'not_found', 'aborted'),
  'canvas.validateLayout': requiredIn('canvas', 'not_found'),
  'canvas.getCanvasState': requiredIn('read', 'not_found'),
  /** REST only: cursor reports (DECISIONS §7). */
  'canvas.moveCursor': requiredIn('canvas', 'not_found'),
  'canvas.leaveCanvas': requiredIn('canvas', 'not_found'),
  /** Who is on a room's canvas now, and being there without a cursor (DECISIONS §17). */
  'canvas.getPresence': requiredIn('read', 'not_found'),
  'canvas.reportPresence': requiredIn('canvas', 'not_found'),

  /** REST only: the event stream. */
  'sync.subscribe': requiredIn('exempt', 'rate_limited'),

  'offices.listOffices': optionalOnRpcIn('read'),
  'offices.getOffice': requiredIn('read'),
  'offices.createOffice': requiredIn('write', 'conflict'),
  'offices.updateOffice': requiredIn('write', 'conflict'),
  'offices.deleteOffice': requiredIn('write'),
  // Mail to strangers (DECISIONS §16); and at most 3 a day per address per office (core/offices/invites.ts).
  'offices.inviteToOffice': requiredIn('strict', 'conflict'),
  'offices.getInviteInfo': publicIn('strict', 'invalid_token'),
  'offices.acceptInvite': requiredIn('strict', 'invalid_token', 'conflict'),
  'offices.listMembers': requiredIn('read'),
  'offices.removeMember': requiredIn('write', 'precondition'),
  'offices.updateMemberRole': requiredIn('write', 'precondition'),
  /** REST only (DECISIONS §13): an office's pending invitations, and cancelling one. */
  'offices.listInvites': requiredIn('read'),
  'offices.cancelInvite': requiredIn('write'),

  'passport.getPassport': requiredIn('read', 'not_found'),
  'passport.updatePassport': requiredIn('write'),
  'passport.importCV': requiredIn('expensive', 'not_found', 'limit_reached', 'unreadable_file'),
  'passport.addSkill': requiredIn('write', 'not_found', 'conflict', 'limit_reached'),
  'passport.removeSkill': requiredIn('write'),
  'passport.addExperience': requiredIn('write', 'not_found', 'limit_reached'),
  'passport.updateExperience': requiredIn('write'),
  'passport.deleteExperience': requiredIn('write'),
  /** REST only (DECISIONS §10): `POST /api/cv/parse`, a CV's preview; parsing is CPU-heavy. */
  'passport.parseCV': requiredIn('expensive', 'unreadable_file'),

  'rtc.generateToken': requiredIn('exempt', 'not_found', 'conflict', 'not_configured'),
  'rtc.getConfig': requiredIn('read'),

  'shelves.listShelves': requiredIn('read'),
  'shelves.getShelf': requiredIn('read'),
  'shelves.createShelf': requiredIn('write', 'limit_reached'),
  'shelves.updateShelf': requiredIn('write'),
  'shelves.deleteShelf': requiredIn('write'),
  'shelves.addLink': requiredIn('write', 'limit_reached'),
  'shelves.removeLink': requiredIn('write'),
  'shelves.moveLink': requiredIn('write'),

  /** REST only (DECISIONS §9): multipart uploads, counted and refused before any byte of the body
   *  is read (the gate runs in onRequest). Reading a file is public on REST (DECISIONS §16: its
   *  unguessable id is the capability): avatars are served to anyone, attachments to a caller, so
   *  the identity is optional here and the rest is the operation's to decide. */
  'uploads.upload': requiredIn('upload', 'quota_exceeded'),
  'uploads.attach': requiredIn('upload', 'quota_exceeded'),
  'uploads.get': optionalIn('read'),
  'uploads.delete': requiredIn('write'),

  'users.getUser': requiredIn('read'),
  'users.updateProfile': requiredIn('write'),
  'users.searchUsers': requiredIn('read'),
  'users.getDisplayInfo': requiredIn('read'),
  /** REST only: upload an avatar and show it on one's profile (multipart). */
  'users.uploadAvatar': requiredIn('upload', 'quota_exceeded'),

  // Trust and safety (DECISIONS §11), REST only.
  'reports.createReport': requiredIn('write', 'not_found', 'conflict'),
  'reports.listReports': requiredIn('read'),
  'appeals.createAppeal': requiredIn('write', 'not_found', 'conflict', 'precondition'),
  'appeals.listAppeals': requiredIn('read'),
  'messages.listMessages': requiredIn('read'),
  'messages.markRead': requiredIn('write'),
  'messages.deleteMessage': requiredIn('write'),
  /** Public: the service's announcements, shown before sign-in too. */
  'motd.getMotd': publicIn('read'),
  'widgets.listWidgets': requiredIn('read'),
  'widgets.listInstallations': requiredIn('read'),
  'widgets.installWidget': requiredIn('write', 'not_found', 'limit_reached', 'precondition'),
  'widgets.updateInstallation': requiredIn('write', 'precondition'),
  'widgets.removeInstallation': requiredIn('write'),
  /** CPU work on the caller's text: the expensive tier (SPEC Limits: "AI classification"). */
  'safety.classify': requiredIn('expensive'),

  /** REST only (DECISIONS §12): administration, by the OIDC provider's tokens. */
  'admin.listUsers': adminIn('read'),
  'admin.getUser': adminIn('read'),
  'admin.listRooms': adminIn('read'),
  'admin.getRoom': adminIn('read'),
  'admin.deleteRoom': superAdminIn('write'),
  'admin.listReports': adminIn('read'),
  'admin.getReport': adminIn('read'),
  'admin.resolveReport': adminIn('write', 'precondition'),
  'admin.listAppeals': adminIn('read'),
  'admin.decideAppeal': adminIn('write', 'precondition'),
  /** Lifting a suspension without an appeal (DECISIONS §12). */
  'admin.unsuspendUser': superAdminIn('write', 'precondition'),
  'admin.createMotd': adminIn('write'),
  'admin.updateMotd': adminIn('write'),
  'admin.createWidget': adminIn('write'),
  'admin.updateWidget': adminIn('write'),
  'admin.deleteWidget': adminIn('write'),
  'admin.listAudit': adminIn('read')
} as const satisfies Record<string, OperationPolicy>

export type OperationId = keyof typeof OPERATIONS

/** What a suspended user may still do (DECISIONS §11): see who they are, read why, appeal, sign out.
 *  Every other operation answers 403 AccountSuspended / PERMISSION_DENIED (src/http/admission.ts). */
export const SUSPENDED_MAY_CALL: ReadonlySet<OperationId> = new Set<OperationId>([
  'auth.getMe', 'auth.logout', 'messages.listMessages', 'appeals.listAppeals', 'appeals.createAppeal'
])

export function isOperationId (value: unknown): value is OperationId {
  return typeof value === 'string' && Object.hasOwn(OPERATIONS, value)
}
