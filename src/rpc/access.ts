// Every RPC method's policy in one table: its access class (SPEC Authentication: Public, Optional,
// Required) and its rate-limit tier. A method missing here is Required in the `standard` tier.
import type { Access } from '../admission.js'
import type { Tier } from '../ratelimit/tiers.js'

export interface MethodPolicy {
  access: Access
  tier: Tier
}

const POLICY: Record<string, MethodPolicy> = {
  'app.auth.v1.AuthService/RequestLogin': { access: 'public', tier: 'strict' },
  'app.auth.v1.AuthService/PollLoginStatus': { access: 'public', tier: 'standard' },
  'app.auth.v1.AuthService/GetAuthorizeInfo': { access: 'public', tier: 'read' },
  'app.auth.v1.AuthService/AuthorizeLogin': { access: 'public', tier: 'standard' },
  'app.auth.v1.AuthService/GetMe': { access: 'required', tier: 'read' },
  // Authenticated by the refresh token itself, so an expired access token does not lock a client out.
  'app.auth.v1.AuthService/RefreshToken': { access: 'public', tier: 'standard' },
  'app.auth.v1.AuthService/Logout': { access: 'required', tier: 'standard' },
  'app.auth.v1.AuthService/RequestDeletion': { access: 'required', tier: 'strict' },
  'app.auth.v1.AuthService/ConfirmDeletion': { access: 'public', tier: 'strict' },
  'app.auth.v1.AuthService/GetConfig': { access: 'public', tier: 'read' },
  'app.auth.v1.AuthService/Ping': { access: 'public', tier: 'standard' },
  'app.offices.v1.OfficesService/GetInviteInfo': { access: 'public', tier: 'read' },
  'app.rooms.v1.RoomsService/ListRooms': { access: 'optional', tier: 'read' },
  'app.rooms.v1.RoomsService/GetRoom': { access: 'required', tier: 'read' },
  'app.rooms.v1.RoomsService/CreateRoom': { access: 'required', tier: 'write' },
  'app.rooms.v1.RoomsService/UpdateRoom': { access: 'required', tier: 'write' },
  'app.rooms.v1.RoomsService/DeleteRoom': { access: 'required', tier: 'write' },
  'app.sparks.v1.SparksService/ListSparks': { access: 'required', tier: 'read' },
  'app.sparks.v1.SparksService/GetSpark': { access: 'required', tier: 'read' },
  'app.sparks.v1.SparksService/CreateSpark': { access: 'required', tier: 'write' },
  'app.sparks.v1.SparksService/UpdateSpark': { access: 'required', tier: 'write' },
  'app.sparks.v1.SparksService/DeleteSpark': { access: 'required', tier: 'write' },
  'app.sparks.v1.SparksService/MoveSpark': { access: 'required', tier: 'canvas' },
  'app.canvas.v1.CanvasService/UpdatePosition': { access: 'required', tier: 'canvas' },
  'app.canvas.v1.CanvasService/BatchUpdatePositions': { access: 'required', tier: 'canvas' },
  'app.canvas.v1.CanvasService/ComputeLayout': { access: 'required', tier: 'canvas' },
  'app.canvas.v1.CanvasService/ValidateLayout': { access: 'required', tier: 'canvas' },
  'app.canvas.v1.CanvasService/GetCanvasState': { access: 'required', tier: 'read' },
  'app.offices.v1.OfficesService/ListOffices': { access: 'optional', tier: 'read' },
  // Rate-limit tiers of the remaining Required methods (SPEC tiers: lists and reads read; creates,
  // updates and deletes write; CV parsing expensive; the video/voice token exempt).
  'app.offices.v1.OfficesService/GetOffice': { access: 'required', tier: 'read' },
  'app.offices.v1.OfficesService/CreateOffice': { access: 'required', tier: 'write' },
  'app.offices.v1.OfficesService/UpdateOffice': { access: 'required', tier: 'write' },
  'app.offices.v1.OfficesService/DeleteOffice': { access: 'required', tier: 'write' },
  'app.offices.v1.OfficesService/InviteToOffice': { access: 'required', tier: 'write' },
  'app.offices.v1.OfficesService/AcceptInvite': { access: 'required', tier: 'write' },
  'app.offices.v1.OfficesService/ListMembers': { access: 'required', tier: 'read' },
  'app.offices.v1.OfficesService/RemoveMember': { access: 'required', tier: 'write' },
  'app.offices.v1.OfficesService/UpdateMemberRole': { access: 'required', tier: 'write' },
  'app.passport.v1.PassportService/GetPassport': { access: 'required', tier: 'read' },
  'app.passport.v1.PassportService/UpdatePassport': { access: 'required', tier: 'write' },
  'app.passport.v1.PassportService/ImportCV': { access: 'required', tier: 'expensive' },
  'app.passport.v1.PassportService/AddSkill': { access: 'required', tier: 'write' },
  'app.passport.v1.PassportService/RemoveSkill': { access: 'required', tier: 'write' },
  'app.passport.v1.PassportService/AddExperience': { access: 'required', tier: 'write' },
  'app.passport.v1.PassportService/UpdateExperience': { access: 'required', tier: 'write' },
  'app.passport.v1.PassportService/DeleteExperience': { access: 'required', tier: 'write' },
  'app.rtc.v1.RtcService/GenerateToken': { access: 'required', tier: 'exempt' },
  'app.rtc.v1.RtcService/GetConfig': { access: 'required', tier: 'read' },
  'app.shelves.v1.ShelvesService/ListShelves': { access: 'required', tier: 'read' },
  'app.shelves.v1.ShelvesService/GetShelf': { access: 'required', tier: 'read' },
  'app.shelves.v1.ShelvesService/CreateShelf': { access: 'required', tier: 'write' },
  'app.shelves.v1.ShelvesService/UpdateShelf': { access: 'required', tier: 'write' },
  'app.shelves.v1.ShelvesService/DeleteShelf': { access: 'required', tier: 'write' },
  'app.shelves.v1.ShelvesService/AddLink': { access: 'required', tier: 'write' },
  'app.shelves.v1.ShelvesService/RemoveLink': { access: 'required', tier: 'write' },
  'app.shelves.v1.ShelvesService/MoveLink': { access: 'required', tier: 'write' },
  'app.users.v1.UsersService/GetUser': { access: 'required', tier: 'read' },
  'app.users.v1.UsersService/UpdateProfile': { access: 'required', tier: 'write' },
  'app.users.v1.UsersService/SearchUsers': { access: 'required', tier: 'read' },
  'app.users.v1.UsersService/GetDisplayInfo': { access: 'required', tier: 'read' }
}

const DEFAULT_POLICY: MethodPolicy = { access: 'required', tier: 'standard' }

export function policyOf (serviceTypeName: string, methodName: string): MethodPolicy {
  return POLICY[`${serviceTypeName}/${methodName}`] ?? DEFAULT_POLICY
}
