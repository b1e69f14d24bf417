import { join } from "node:path";
import type { Sql } from "postgres";
import { type AppliedMigration, assertSchemaNotNewer, knownMigrations } from "./schema-version.ts";

// Resolved from this file, not the cwd, so it works from any working directory.
export const migrationsFolder = join(import.meta.dirname, "../../shared/db/migrations");

// Session-level advisory lock serializing migrators across processes. The two-int form
// lives in a different key space from single-bigint advisory locks (uid+scope, skill
// grants), so it can never collide with the app's own locks.
export const MIGRATION_LOCK_KEYS = [0x57434c4c, 1] as const;

export type MigrationTarget = Sql;

export type MigrateOptions = {
  /** Where the SQL and meta/_journal.json are; a bundled Lambda passes its copy. */
  migrationsFolder?: string;
};

/** What one migrate call did. */
export type MigrationResult = {
  /** Migrations applied by this call (0 when the database was already current). */
  applied: number;
  /** Migrations this code knows; after a successful call the database has all of them. */
  total: number;
};

const APPLIED_SQL = `select hash, created_at::text as created_at from drizzle.__drizzle_migrations`;
const HAS_TABLE_SQL = `select to_regclass('drizzle.__drizzle_migrations') is not null as present`;

type AppliedRow = { hash: string; created_at: string };
const toApplied = (rows: readonly AppliedRow[]): AppliedMigration[] =>
  rows.map((r) => ({ hash: r.hash, createdAt: Number(r.created_at) }));

// Applies every pending migration in shared/db/migrations. Idempotent. Refuses
// (SchemaNewerThanCodeError, nothing applied) a database migrated by newer code.
export async function migrate(
  target: MigrationTarget,
  options: MigrateOptions = {},
): Promise<MigrationResult> {
  return migratePostgres(target, options);
}

// drizzle's migrator alone is not safe against a concurrent migrator: it reads the last
// applied migration outside its transaction, so two processes both try to apply the same
// migration and the second fails on "already exists". So the whole run holds
// pg_advisory_lock: the second process waits, then finds nothing left to apply.
// The lock must be held by one connection for the whole run: with a multi-connection
// client a reserved connection holds it while the pool applies the migrations; a
// single-connection client (max: 1) runs everything, lock included, on its one
// connection (reserving it would leave nothing for the migration itself).
export async function migratePostgres(
  sql: Sql,
  options: MigrateOptions = {},
): Promise<MigrationResult> {
  const folder = options.migrationsFolder ?? migrationsFolder;
  const known = knownMigrations(folder);
  // Loaded lazily: only a migrating process needs drizzle's migrator.
  const [{ drizzle }, { migrate: drizzleMigrate }] = await Promise.all([
    import("drizzle-orm/postgres-js"),
    import("drizzle-orm/postgres-js/migrator"),
  ]);
  // drizzle() rewires the client's date/json parsers; undo that afterwards so migrating
  // has no lasting effect on the caller's client.
  const parsers = { ...sql.options.parsers };
  const serializers = { ...sql.options.serializers };
  const reserved = sql.options.max > 1 ? await sql.reserve() : undefined;
  const lock = reserved ?? sql;
  const [classId, objId] = MIGRATION_LOCK_KEYS;
  try {
    await lock`select pg_advisory_lock(${classId}::int, ${objId}::int)`;
    try {
      // Read under the lock, so no other migrator changes the answer before we act on it.
      const before = await appliedPostgres(sql);
      assertSchemaNotNewer(before, known);
      await drizzleMigrate(drizzle(sql), { migrationsFolder: folder });
      return { applied: known.length - before.length, total: known.length };
    } finally {
      await lock`select pg_advisory_unlock(${classId}::int, ${objId}::int)`;
    }
  } finally {
    // If the connection died, the server already dropped the session lock with it.
    reserved?.release();
    restore(sql.options.parsers, parsers);
    restore(sql.options.serializers, serializers);
  }
}

async function appliedPostgres(sql: Sql): Promise<AppliedMigration[]> {
  const [row] = await sql.unsafe<{ present: boolean }[]>(HAS_TABLE_SQL);
  if (!row?.present) return [];
  return toApplied(await sql.unsafe<AppliedRow[]>(APPLIED_SQL));
}

function restore(target: Record<string, unknown>, saved: Record<string, unknown>): void {
  for (const key of Object.keys(target)) {
    if (!(key in saved)) delete target[key];
  }
  Object.assign(target, saved);
}
