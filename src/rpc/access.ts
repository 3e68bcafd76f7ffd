// Every RPC method's policy in one table: its access class (SPEC Authentication: Public, Optional,
// Required) and its rate-limit tier. A method missing here is Required in the `standard` tier.
import type { Tier } from '../ratelimit/tiers.js'

export type Access = 'public' | 'optional' | 'required'

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
  'app.offices.v1.OfficesService/ListOffices': { access: 'optional', tier: 'read' }
}

const DEFAULT_POLICY: MethodPolicy = { access: 'required', tier: 'standard' }

export function policyOf (serviceTypeName: string, methodName: string): MethodPolicy {
  return POLICY[`${serviceTypeName}/${methodName}`] ?? DEFAULT_POLICY
}
