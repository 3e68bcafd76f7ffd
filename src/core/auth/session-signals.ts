// How auth tells every instance that a session or an account is gone, so the event streams opened
// with it end at once (DECISIONS §3, §7). Sent after the change commits; delivery is best effort,
// and each instance also re-checks its streams' sessions on every heartbeat.
export interface SessionSignals {
  sessionEnded (sessionId: string): Promise<void>
  accountDeleted (userId: string): Promise<void>
  /** The user's row changed (profile): every instance forgets its cached copies. */
  userChanged (userId: string): Promise<void>
  /** Hears the signals of every instance; `lostTrack` when some may have been missed (listener reconnected). */
  listen (handlers: SessionSignalHandlers): void
}

export interface SessionSignalHandlers {
  sessionEnded (sessionId: string): void
  accountDeleted (userId: string): void
  userChanged (userId: string): void
  lostTrack (): void
}
