import { readMigrationFiles } from "drizzle-orm/migrator";

/** One migration as drizzle records it in drizzle.__drizzle_migrations. */
export type AppliedMigration = { hash: string; createdAt: number };

/** What this code's migrations folder knows (drizzle's own reading of the journal). */
export type KnownMigrations = ReadonlyArray<{ folderMillis: number; hash: string }>;

export function knownMigrations(migrationsFolder: string): KnownMigrations {
  return readMigrationFiles({ migrationsFolder });
}

/**
 * The database was migrated by a newer release (or a diverging branch) than this code.
 * drizzle alone would apply nothing and let this code run against a schema it does not
 * know, so the migrator refuses instead and says what to do.
 */
export class SchemaNewerThanCodeError extends Error {
  override readonly name = "SchemaNewerThanCodeError";
  readonly unknownMigrations: readonly AppliedMigration[];

  constructor(unknown: readonly AppliedMigration[], newestKnownMillis: number) {
    const first = unknown[0];
    super(
      `The database has ${unknown.length} migration(s) this code does not know ` +
        `(first: created_at ${first?.createdAt}, hash ${first?.hash.slice(0, 12)}; ` +
        `newest known here: ${newestKnownMillis}). It was migrated by a newer release: ` +
        "deploy that release (or newer), or restore the database from before it; never run " +
        "older code against it.",
    );
    this.unknownMigrations = unknown;
  }
}

/**
 * Throws SchemaNewerThanCodeError when the database records a migration that is not in
 * this code's journal. Matching is by the journal timestamp drizzle stores as created_at:
 * that is what drizzle compares when deciding what to apply.
 */
export function assertSchemaNotNewer(
  applied: readonly AppliedMigration[],
  known: KnownMigrations,
): void {
  const knownMillis = new Set(known.map((m) => m.folderMillis));
  const unknown = applied.filter((m) => !knownMillis.has(m.createdAt));
  if (unknown.length > 0) {
    const newest = known.reduce((max, m) => Math.max(max, m.folderMillis), 0);
    throw new SchemaNewerThanCodeError(unknown, newest);
  }
}
