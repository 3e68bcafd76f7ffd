/** What the service's parts log through (Fastify's pino logger fits it). */
export interface Logger {
  info (details: Record<string, unknown>, message: string): void
  warn (details: Record<string, unknown>, message: string): void
  error (details: Record<string, unknown>, message: string): void
}
