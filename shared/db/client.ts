import type { ExtractTablesWithRelations } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import type { Sql } from "postgres";
import * as schema from "./schema.ts";

export type Schema = typeof schema;

// postgres.js everywhere: the cloud (Lambda, Workers via nodejs_compat, agent-hosts) and
// the local Workcell, which runs PostgreSQL itself (docs/decisions/0092).
export type PostgresDb = PostgresJsDatabase<Schema>;

// What services and repositories accept. Prefer the query builder; raw statements go
// through executeRows (execute-rows.ts) for their typed rows.
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
