// Kysely 0.28 has no PGlite dialect (0.29 does, but needs Node 22), and `kysely-pglite` drags in a
// CLI toolchain, so this is the small driver: Postgres adapter/compiler, one PGlite connection.
// PGlite runs one query at a time, so a connection is handed out under a lock: a transaction holds
// it until commit or rollback and every other query waits its turn.
import type { PGlite } from '@electric-sql/pglite'
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult
} from 'kysely'
import { traced } from '../infra/tracing.js'

class PGliteConnection implements DatabaseConnection {
  constructor (private readonly pg: PGlite) {}

  async executeQuery<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    // A span per query while tracing is on, as the pg instrumentation makes on Postgres (the SQL
    // with its placeholders; never the values).
    const result = await traced('pglite.query', { 'db.system.name': 'postgresql', 'db.query.text': query.sql },
      async () => await this.pg.query<R>(query.sql, query.parameters as unknown[], { rowMode: 'object' }))
    const affected = result.affectedRows ?? 0
    return {
      rows: result.rows,
      ...(result.fields.length === 0 || /^\s*(insert|update|delete|merge)/i.test(query.sql)
        ? { numAffectedRows: BigInt(affected) }
        : {})
    }
  }

  async * streamQuery<R> (): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on PGlite')
  }
}

class PGliteDriver implements Driver {
  private readonly connection: PGliteConnection
  private tail: Promise<void> = Promise.resolve()
  private readonly releases = new Map<DatabaseConnection, () => void>()

  constructor (private readonly pg: PGlite) {
    this.connection = new PGliteConnection(pg)
  }

  async init (): Promise<void> {
    await this.pg.waitReady
  }

  async acquireConnection (): Promise<DatabaseConnection> {
    let release!: () => void
    const turn = new Promise<void>((resolve) => { release = resolve })
    const previous = this.tail
    this.tail = previous.then(() => turn)
    await previous
    this.releases.set(this.connection, release)
    return this.connection
  }

  async beginTransaction (connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'))
  }

  async commitTransaction (connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction (connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  async releaseConnection (connection: DatabaseConnection): Promise<void> {
    const release = this.releases.get(connection)
    this.releases.delete(connection)
    release?.()
  }

  async destroy (): Promise<void> {
    // The owner of the PGlite instance closes it (it may outlive this Kysely instance).
  }
}

export class PGliteDialect implements Dialect {
  constructor (private readonly pg: PGlite) {}
  createAdapter (): DialectAdapter { return new PostgresAdapter() }
  createDriver (): Driver { return new PGliteDriver(this.pg) }
  createQueryCompiler (): QueryCompiler { return new PostgresQueryCompiler() }
  createIntrospector (db: Kysely<unknown>): DatabaseIntrospector { return new PostgresIntrospector(db) }
}
