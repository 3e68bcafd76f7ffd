// Video/voice channel tokens (DECISIONS §9), built with Agora's official builder (AccessToken2), so
// Agora's own SDKs and tools accept them. Unconfigured (no RTC_APP_ID): tokens are refused with
// `not_configured`, and the configuration says `enabled: false`.
// Who gets one (DECISIONS §16): a channel is the id of a room the caller may open (public, or
// private and theirs) or of an office they belong to — any other name is not_found, the same answer
// whether a private room exists or not; a numeric uid belongs, within its channel, to the first
// user who got a token for it until that token expires (rtc.repository.ts); a string account is the
// caller's own user id. So no one joins a call they cannot see, or takes someone's place in it.
import agoraToken from 'agora-token'
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, forbidden, notFound, validationError } from '../errors.js'
import { isMember } from '../offices/offices.repository.js'
import { canSeeRoom } from '../rooms/room-access.js'
import { findRoom } from '../rooms/rooms.repository.js'
import { parseInput } from '../validation.js'
import { claimUid, dropExpiredClaims } from './rtc.repository.js'
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
  const { config, clock, db } = deps

  /** Whether the caller may be in this channel: a room they may open, or an office of theirs. */
  async function mayEnter (actor: Actor, channelName: string): Promise<boolean> {
    if (channelName.startsWith('room_')) {
      const room = await findRoom(db, channelName)
      return room !== undefined && canSeeRoom(room, actor)
    }
    if (channelName.startsWith('office_')) return await isMember(db, channelName, actor.userId)
    return false
  }

  return {
    config (): RtcConfig {
      return { appId: config.rtcAppId ?? '', enabled: config.rtcAppId !== undefined, tokenTtlSeconds: RTC_TOKEN_TTL_SECONDS }
    },

    /** A token to join `channelName` as `uid`, publishing unless SUBSCRIBER is asked for. */
    async generateToken (actor: Actor, input: unknown): Promise<RtcToken> {
      const request = parseInput(GenerateTokenInput, input)
      const channelName = checkedChannelName(request.channelName)
      const uid = checkedUid(request.uid)
      const appId = config.rtcAppId
      const certificate = config.rtcAppCertificate
      if (appId === undefined || certificate === undefined) {
        throw new AppError('not_configured', 'Video/voice is not configured on this server (RTC_APP_ID and RTC_APP_CERTIFICATE are unset).')
      }
      if (!await mayEnter(actor, channelName)) throw notFound('Channel')
      if ('account' in uid && uid.account !== actor.userId) throw forbidden('A string uid must be your own user id.')
      const now = clock.now()
      const expiresAt = new Date((Math.floor(now.getTime() / 1000) + RTC_TOKEN_TTL_SECONDS) * 1000)
      if ('numeric' in uid) {
        if (!await claimUid(db, { channel: channelName, uid: uid.numeric, userId: actor.userId, now, expiresAt })) {
          throw new AppError('conflict', `uid ${uid.numeric} is taken in this channel until its holder's token expires; ask for another.`)
        }
        await dropExpiredClaims(db, channelName, now)
      }
      const role = request.role === 'SUBSCRIBER' ? RtcRole.SUBSCRIBER : RtcRole.PUBLISHER
      // The builder stamps the token with the current time itself; the expiry we report matches it.
      const token = 'numeric' in uid
        ? RtcTokenBuilder.buildTokenWithUid(appId, certificate, channelName, uid.numeric, role, RTC_TOKEN_TTL_SECONDS, RTC_TOKEN_TTL_SECONDS)
        : RtcTokenBuilder.buildTokenWithUserAccount(appId, certificate, channelName, uid.account, role, RTC_TOKEN_TTL_SECONDS, RTC_TOKEN_TTL_SECONDS)
      return { token, expiresAt: expiresAt.toISOString(), appId }
    }
  }
}
