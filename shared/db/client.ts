import type { ExtractTablesWithRelations } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import type { Sql } from "postgres";
import * as schema from "./schema.ts";

export type Schema = typeof schema;

// postgres.js in the cloud (Lambda, Workers via nodejs_compat, agent-hosts).
export type PostgresDb = PostgresJsDatabase<Schema>;
// PGlite in the one-process local mode (created by infra/db/create-pglite-db.ts; PGlite
// itself is not loaded from shared/).
export type PgliteDb = PgliteDatabase<Schema>;

// What services and repositories should accept: either driver. Only the raw result
// shape of `db.execute()` differs between them, so prefer the query builder.
export type Db = PgDatabase<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
export type DbTransaction = PgTransaction<
  PgQueryResultHKT,
  Schema,
  ExtractTablesWithRelations<Schema>
>;
// Code that works inside or outside a transaction.
export type DbOrTransaction = Db | DbTransaction;

// Wraps a postgres.js client. Runtime-agnostic (no node: imports), so it is usable on
// Node, Lambda and Workers alike. Note that drizzle reconfigures the client's date/time
// and json parsers so that drizzle does the mapping: use the client through the returned
// db, not through raw `sql` queries expecting Date values.
export function createDb(sql: Sql): PostgresDb {
  return drizzle(sql, { schema });
}
