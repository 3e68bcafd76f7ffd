// Video/voice tokens (DECISIONS §9): the inputs both transports validate the same way.
import { Type } from 'typebox'

/** DECISIONS §9: a token is valid for one hour. */
export const RTC_TOKEN_TTL_SECONDS = 3600
/** Agora's bounds: a channel name of at most 64 bytes, a string account of at most 255. */
export const CHANNEL_NAME_MAX_BYTES = 64
export const ACCOUNT_MAX_BYTES = 255
/** A numeric uid is an unsigned 32-bit integer other than 0 (0 would admit any user). */
export const UID_MAX = 4_294_967_295

export type RtcRole = 'PUBLISHER' | 'SUBSCRIBER'

// The characters Agora allows in channel names and string accounts: letters, digits, space and
// these punctuation marks. One character class, so matching is linear in the (length-checked) input.
export const AGORA_NAME_PATTERN = /^[A-Za-z0-9 !#$%&()+\-:;<=.>?@[\]^_{}|~,]+$/

export interface RtcToken {
  token: string
  expiresAt: string
  appId: string
}

export interface RtcConfig {
  appId: string
  enabled: boolean
  tokenTtlSeconds: number
}

// Characters are bounded generously here; the byte bounds are checked in the core, which reports
// the field by name either way.
export const GenerateTokenInput = Type.Object({
  channelName: Type.String({ maxLength: 256, errorMessage: `must be 1 to ${CHANNEL_NAME_MAX_BYTES} bytes of letters, digits, space and !#$%&()+-:;<=.>?@[]^_{}|~,` }),
  uid: Type.String({ maxLength: 1024, errorMessage: `must be a number from 1 to ${UID_MAX} or an account name of 1 to ${ACCOUNT_MAX_BYTES} bytes` }),
  role: Type.Optional(Type.Union([Type.Literal('PUBLISHER'), Type.Literal('SUBSCRIBER')], { errorMessage: 'must be PUBLISHER or SUBSCRIBER' }))
}, { additionalProperties: false })
