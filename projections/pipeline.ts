import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type QueryResult,
} from 'kysely';

/** One statement of a transaction sent whole. */
export interface Statement {
  text: string;
  values: readonly unknown[];
}

/**
 * Runs a transaction of writes in one round trip: its statements, in order, between `BEGIN` and
 * `COMMIT`, all sent at once; the first that fails aborts it, and is what `run` throws. The
 * adapter: infra/pipeline.ts.
 */
export interface WriteTransactions {
  run(statements: readonly Statement[]): Promise<void>;
}

/** What `recordingDb` hands out. */
export interface Recording {
  db: Kysely<unknown>;
  take(): Statement[];
}

/**
 * A Kysely whose queries are not run but kept, in order, for a `PipelinedWrites` transaction:
 * each answers at once with no rows. For code that only writes (a projector marked `pipelined`),
 * which then runs unchanged. `take` hands over what was kept since the last `take`.
 */
export function recordingDb(): Recording {
  let kept: Statement[] = [];
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      kept.push({ text: query.sql, values: query.parameters });
      return { rows: [] };
    },
    // biome-ignore lint/correctness/useYield: a recording has no rows to stream
    async *streamQuery() {
      throw new Error('a recording database does not stream');
    },
  };
  // Kysely's driver that does nothing, handing out the recording connection.
  const driver = new (class extends DummyDriver {
    override async acquireConnection() {
      return connection;
    }
  })();
  const db = new Kysely<unknown>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  return {
    db,
    take: () => {
      const taken = kept;
      kept = [];
      return taken;
    },
  };
}
