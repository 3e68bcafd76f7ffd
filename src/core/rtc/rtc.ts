// Video/voice channel tokens (DECISIONS §9), built with Agora's official builder (AccessToken2), so
// Agora's own SDKs and tools accept them. Unconfigured (no RTC_APP_ID): tokens are refused with
// `not_configured`, and the configuration says `enabled: false`.
import agoraToken from 'agora-token'
import type { CoreDeps } from '../deps.js'
import { AppError, validationError } from '../errors.js'
import { parseInput } from '../validation.js'
import {
  ACCOUNT_MAX_BYTES, AGORA_NAME_PATTERN, CHANNEL_NAME_MAX_BYTES, GenerateTokenInput, RTC_TOKEN_TTL_SECONDS, UID_MAX,
  type RtcConfig, type RtcToken
} from './rtc.types.js'

const { RtcTokenBuilder, RtcRole } = agoraToken

function checkedChannelName (name: string): string {
  const bytes = Buffer.byteLength(name)
  if (bytes < 1 || bytes > CHANNEL_NAME_MAX_BYTES || !AGORA_NAME_PATTERN.test(name)) {
    throw validationError('channelName', `must be 1 to ${CHANNEL_NAME_MAX_BYTES} bytes of letters, digits, space and !#$%&()+-:;<=.>?@[]^_{}|~,`)
  }
  return name
}

/** A decimal uid is Agora's numeric uid (1…2^32-1); anything else is a string account. */
function checkedUid (uid: string): { numeric: number } | { account: string } {
  if (/^\d+$/.test(uid)) {
    const numeric = uid.length <= 10 ? Number(uid) : Number.POSITIVE_INFINITY
    if (numeric < 1 || numeric > UID_MAX) throw validationError('uid', `must be a number from 1 to ${UID_MAX}, or an account name`)
    return { numeric }
  }
  const bytes = Buffer.byteLength(uid)
  if (bytes < 1 || bytes > ACCOUNT_MAX_BYTES || !AGORA_NAME_PATTERN.test(uid)) {
    throw validationError('uid', `must be a number from 1 to ${UID_MAX} or an account name of 1 to ${ACCOUNT_MAX_BYTES} bytes of letters, digits, space and !#$%&()+-:;<=.>?@[]^_{}|~,`)
  }
  return { account: uid }
}

export function createRtc (deps: CoreDeps) {
  const { config, clock } = deps

  return {
    config (): RtcConfig {
      return { appId: config.rtcAppId ?? '', enabled: config.rtcAppId !== undefined, tokenTtlSeconds: RTC_TOKEN_TTL_SECONDS }
    },

    /** A token to join `channelName` as `uid`, publishing unless SUBSCRIBER is asked for. */
    generateToken (input: unknown): RtcToken {
      const request = parseInput(GenerateTokenInput, input)
      const channelName = checkedChannelName(request.channelName)
      const uid = checkedUid(request.uid)
      const appId = config.rtcAppId
      const certificate = config.rtcAppCertificate
      if (appId === undefined || certificate === undefined) {
        throw new AppError('not_configured', 'Video/voice is not configured on this server (RTC_APP_ID and RTC_APP_CERTIFICATE are unset).')
      }
      const role = request.role === 'SUBSCRIBER' ? RtcRole.SUBSCRIBER : RtcRole.PUBLISHER
      // The builder stamps the token with the current time itself; the expiry we report matches it.
      const token = 'numeric' in uid
        ? RtcTokenBuilder.buildTokenWithUid(appId, certificate, channelName, uid.numeric, role, RTC_TOKEN_TTL_SECONDS, RTC_TOKEN_TTL_SECONDS)
        : RtcTokenBuilder.buildTokenWithUserAccount(appId, certificate, channelName, uid.account, role, RTC_TOKEN_TTL_SECONDS, RTC_TOKEN_TTL_SECONDS)
      const expiresAt = new Date((Math.floor(clock.now().getTime() / 1000) + RTC_TOKEN_TTL_SECONDS) * 1000)
      return { token, expiresAt: expiresAt.toISOString(), appId }
    }
  }
}
