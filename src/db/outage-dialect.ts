// Kysely's Postgres dialect with outages translated at the source: every driver step that talks to
// the server (taking a connection, a query, begin/commit/rollback, savepoints) turns a lost or
// refused connection into DatabaseUnavailableError (which the core maps to `unavailable`), so every
// operation of the core answers 503 / UNAVAILABLE during an outage without handling it itself. Other errors pass through unchanged.
// Given PoolWaits, it also times every wait for a connection (what /health reports of the pool).
// It also bounds how long a transaction of ours may sit idle, per transaction (`set local`), never per
// session: behind a transaction pooler (PgBouncer, pool_mode = transaction) a session is shared by
// every client, and PgBouncer refuses the startup parameter that would set it per session.
import {
  CompiledQuery,
  PostgresDialect,
  type DatabaseConnection,
  type Driver,
  type QueryCompiler,
  type QueryResult,
  type PostgresDialectConfig,
  type TransactionSettings
} from 'kysely'
import { translateOutage } from './outage-errors.js'
import type { PoolWaits } from './pool-waits.js'

async function translated<T> (step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    throw translateOutage(error)
  }
}

/** Wraps a connection of the inner driver; the driver unwraps it again for its own steps. */
class OutageAwareConnection implements DatabaseConnection {
  constructor (readonly inner: DatabaseConnection) {}

  async executeQuery<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    return await translated(async () => await this.inner.executeQuery<R>(query))
  }

  async * streamQuery<R> (query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield * this.inner.streamQuery<R>(query, chunkSize)
    } catch (error) {
      throw translateOutage(error)
    }
  }
}

function unwrap (connection: DatabaseConnection): DatabaseConnection {
  return connection instanceof OutageAwareConnection ? connection.inner : connection
}

type CompileQuery = QueryCompiler['compileQuery']

class OutageAwareDriver implements Driver {
  /** Sent as one simple-protocol message, so the timeout costs no round trip of its own. */
  private readonly begin: CompiledQuery | undefined

  constructor (private readonly inner: Driver, private readonly idleInTransactionTimeoutMs: number | undefined, private readonly waits: PoolWaits | undefined) {
    this.begin = idleInTransactionTimeoutMs === undefined || idleInTransactionTimeoutMs === 0
      ? undefined
      : CompiledQuery.raw(`begin; ${idleTimeoutStatement(idleInTransactionTimeoutMs)}`)
  }

  async init (): Promise<void> {
    await translated(async () => { await this.inner.init() })
  }

  async acquireConnection (): Promise<DatabaseConnection> {
    const acquire = async (): Promise<DatabaseConnection> => await translated(async () => await this.inner.acquireConnection())
    return new OutageAwareConnection(this.waits === undefined ? await acquire() : await this.waits.time(acquire))
  }

  async beginTransaction (connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const own = unwrap(connection)
    const begin = this.begin
    await translated(async () => {
      if (begin === undefined) {
        await this.inner.beginTransaction(own, settings)
      } else if (settings.isolationLevel === undefined && settings.accessMode === undefined) {
        await own.executeQuery(begin)
      } else {
        await this.inner.beginTransaction(own, settings)
        await own.executeQuery(CompiledQuery.raw(idleTimeoutStatement(this.idleInTransactionTimeoutMs ?? 0)))
      }
    })
  }

  async commitTransaction (connection: DatabaseConnection): Promise<void> {
    await translated(async () => { await this.inner.commitTransaction(unwrap(connection)) })
  }

  async rollbackTransaction (connection: DatabaseConnection): Promise<void> {
    await translated(async () => { await this.inner.rollbackTransaction(unwrap(connection)) })
  }

  async savepoint (connection: DatabaseConnection, name: string, compileQuery: CompileQuery): Promise<void> {
    await translated(async () => { await this.inner.savepoint?.(unwrap(connection), name, compileQuery) })
  }

  async rollbackToSavepoint (connection: DatabaseConnection, name: string, compileQuery: CompileQuery): Promise<void> {
    await translated(async () => { await this.inner.rollbackToSavepoint?.(unwrap(connection), name, compileQuery) })
  }

  async releaseSavepoint (connection: DatabaseConnection, name: string, compileQuery: CompileQuery): Promise<void> {
    await translated(async () => { await this.inner.releaseSavepoint?.(unwrap(connection), name, compileQuery) })
  }

  async releaseConnection (connection: DatabaseConnection): Promise<void> {
    await this.inner.releaseConnection(unwrap(connection))
  }

  async destroy (): Promise<void> {
    await this.inner.destroy()
  }
}

function idleTimeoutStatement (ms: number): string {
  return `set local idle_in_transaction_session_timeout = ${Math.trunc(ms)}`
}

export interface OutageAwarePostgresDialectConfig extends PostgresDialectConfig {
  /** Postgres ends a session of ours whose transaction sits idle this long (0 or unset: never). */
  idleInTransactionTimeoutMs?: number
}

export class OutageAwarePostgresDialect extends PostgresDialect {
  private readonly idleInTransactionTimeoutMs: number | undefined
  private readonly waits: PoolWaits | undefined

  constructor (config: OutageAwarePostgresDialectConfig, waits?: PoolWaits) {
    super(config)
    this.idleInTransactionTimeoutMs = config.idleInTransactionTimeoutMs
    this.waits = waits
  }

  override createDriver (): Driver {
    return new OutageAwareDriver(super.createDriver(), this.idleInTransactionTimeoutMs, this.waits)
  }
}
