// The catalogue: every operation of the service once, with who may call it (its access class, SPEC
// Authentication) and the rate-limit tier it is counted in (SPEC Limits). Both transports and the
// admission gate (src/http/admission.ts) read it, and the app refuses to start with a REST route or an
// RPC method that names no entry here. An RPC method's operation is `<domain>.<method>`
// (app.rooms.v1.RoomsService/GetRoom is `rooms.getRoom`); a REST route names its operation in its
// config, the RPC one where both transports offer it, so the two cannot disagree. Where SPEC makes
// the transports differ, the entry gives each its own access class (`accessOn` reads it).

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
}

const publicIn = (tier: Tier): OperationPolicy => ({ access: 'public', tier })
const optionalIn = (tier: Tier): OperationPolicy => ({ access: 'optional', tier })
/** REST only (DECISIONS §12): `/api/admin/*`; the RPC gateway has no admin methods. */
const adminIn = (tier: Tier): OperationPolicy => ({ access: 'admin', tier })
const superAdminIn = (tier: Tier): OperationPolicy => ({ access: 'super_admin', tier })
const requiredIn = (tier: Tier): OperationPolicy => ({ access: 'required', tier })
/** SPEC's Optional class is the RPC gateway's (DECISIONS §16): anonymous ListRooms / ListOffices see
 *  the public ones, while REST needs the session for every route but the public ones. */
const optionalOnRpcIn = (tier: Tier): OperationPolicy => ({ access: { rest: 'required', rpc: 'optional' }, tier })

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
  'auth.pollLoginStatus': publicIn('standard'),
  'auth.getAuthorizeInfo': publicIn('read'),
  'auth.authorizeLogin': publicIn('standard'),
  /** REST only: the mailed link opened in a browser (sets the session cookie). */
  'auth.openSignInLink': publicIn('standard'),
  'auth.getMe': requiredIn('read'),
  // Authenticated by the refresh token itself, so an expired access token does not lock a client out.
  'auth.refreshToken': publicIn('standard'),
  'auth.logout': requiredIn('standard'),
  'auth.requestDeletion': requiredIn('strict'),
  'auth.confirmDeletion': publicIn('strict'),
  'auth.getConfig': publicIn('read'),
  'auth.ping': publicIn('standard'),

  'rooms.listRooms': optionalOnRpcIn('read'),
  'rooms.getRoom': requiredIn('read'),
  'rooms.createRoom': requiredIn('write'),
  'rooms.updateRoom': requiredIn('write'),
  'rooms.deleteRoom': requiredIn('write'),

  'sparks.listSparks': requiredIn('read'),
  'sparks.getSpark': requiredIn('read'),
  'sparks.createSpark': requiredIn('write'),
  'sparks.updateSpark': requiredIn('write'),
  'sparks.deleteSpark': requiredIn('write'),
  'sparks.moveSpark': requiredIn('canvas'),

  'canvas.updatePosition': requiredIn('canvas'),
  'canvas.batchUpdatePositions': requiredIn('canvas'),
  'canvas.computeLayout': requiredIn('canvas'),
  'canvas.validateLayout': requiredIn('canvas'),
  'canvas.getCanvasState': requiredIn('read'),
  /** REST only: cursor reports (DECISIONS §7). */
  'canvas.moveCursor': requiredIn('canvas'),
  'canvas.leaveCanvas': requiredIn('canvas'),

  /** REST only: the event stream. */
  'sync.subscribe': requiredIn('exempt'),

  'offices.listOffices': optionalOnRpcIn('read'),
  'offices.getOffice': requiredIn('read'),
  'offices.createOffice': requiredIn('write'),
  'offices.updateOffice': requiredIn('write'),
  'offices.deleteOffice': requiredIn('write'),
  // Mail to strangers (DECISIONS §16); and at most 3 a day per address per office (core/offices/invites.ts).
  'offices.inviteToOffice': requiredIn('strict'),
  'offices.getInviteInfo': publicIn('strict'),
  'offices.acceptInvite': requiredIn('strict'),
  'offices.listMembers': requiredIn('read'),
  'offices.removeMember': requiredIn('write'),
  'offices.updateMemberRole': requiredIn('write'),
  /** REST only (DECISIONS §13): an office's pending invitations, and cancelling one. */
  'offices.listInvites': requiredIn('read'),
  'offices.cancelInvite': requiredIn('write'),

  'passport.getPassport': requiredIn('read'),
  'passport.updatePassport': requiredIn('write'),
  'passport.importCV': requiredIn('expensive'),
  'passport.addSkill': requiredIn('write'),
  'passport.removeSkill': requiredIn('write'),
  'passport.addExperience': requiredIn('write'),
  'passport.updateExperience': requiredIn('write'),
  'passport.deleteExperience': requiredIn('write'),
  /** REST only (DECISIONS §10): `POST /api/cv/parse`, a CV's preview; parsing is CPU-heavy. */
  'passport.parseCV': requiredIn('expensive'),

  'rtc.generateToken': requiredIn('exempt'),
  'rtc.getConfig': requiredIn('read'),

  'shelves.listShelves': requiredIn('read'),
  'shelves.getShelf': requiredIn('read'),
  'shelves.createShelf': requiredIn('write'),
  'shelves.updateShelf': requiredIn('write'),
  'shelves.deleteShelf': requiredIn('write'),
  'shelves.addLink': requiredIn('write'),
  'shelves.removeLink': requiredIn('write'),
  'shelves.moveLink': requiredIn('write'),

  /** REST only (DECISIONS §9): multipart uploads, counted and refused before any byte of the body
   *  is read (the gate runs in onRequest). Reading a file is public on REST (DECISIONS §16: its
   *  unguessable id is the capability): avatars are served to anyone, attachments to a caller, so
   *  the identity is optional here and the rest is the operation's to decide. */
  'uploads.upload': requiredIn('upload'),
  'uploads.attach': requiredIn('upload'),
  'uploads.get': optionalIn('read'),
  'uploads.delete': requiredIn('write'),

  'users.getUser': requiredIn('read'),
  'users.updateProfile': requiredIn('write'),
  'users.searchUsers': requiredIn('read'),
  'users.getDisplayInfo': requiredIn('read'),
  /** REST only: upload an avatar and show it on one's profile (multipart). */
  'users.uploadAvatar': requiredIn('upload'),

  // Trust and safety (DECISIONS §11), REST only.
  'reports.createReport': requiredIn('write'),
  'reports.listReports': requiredIn('read'),
  'appeals.createAppeal': requiredIn('write'),
  'appeals.listAppeals': requiredIn('read'),
  'messages.listMessages': requiredIn('read'),
  'messages.markRead': requiredIn('write'),
  'messages.deleteMessage': requiredIn('write'),
  /** Public: the service's announcements, shown before sign-in too. */
  'motd.getMotd': publicIn('read'),
  'widgets.listWidgets': requiredIn('read'),
  'widgets.listInstallations': requiredIn('read'),
  'widgets.installWidget': requiredIn('write'),
  'widgets.updateInstallation': requiredIn('write'),
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
  'admin.resolveReport': adminIn('write'),
  'admin.listAppeals': adminIn('read'),
  'admin.decideAppeal': adminIn('write'),
  /** Lifting a suspension without an appeal (DECISIONS §12). */
  'admin.unsuspendUser': superAdminIn('write'),
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
