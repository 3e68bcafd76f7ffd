// app.rtc.v1.RtcService: message ↔ core mapping only. An unset role asks for the default, PUBLISHER.
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { actorOf } from './context.js'
import { RtcRole, RtcService } from '../gen/app/rtc/v1/rtc_pb.js'

const ROLE_NAMES: Partial<Record<RtcRole, 'PUBLISHER' | 'SUBSCRIBER'>> = {
  [RtcRole.PUBLISHER]: 'PUBLISHER',
  [RtcRole.SUBSCRIBER]: 'SUBSCRIBER'
}

export function rtcService (core: Core): ServiceImpl<typeof RtcService> {
  const { rtc } = core
  return {
    async generateToken (req, context) {
      // The gateway has refused enum values RtcRole lacks (closed-enums.ts); should one come through
      // anyway, it reaches the core as itself, and the core names it invalid.
      const role = req.role === RtcRole.RTC_ROLE_UNSPECIFIED ? undefined : (ROLE_NAMES[req.role] ?? String(req.role))
      return await rtc.generateToken(actorOf(context), { channelName: req.channelName, uid: req.uid, role })
    },
    async getConfig () {
      return rtc.config()
    }
  }
}
