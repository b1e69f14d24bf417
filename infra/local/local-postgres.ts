import { access, chmod, mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { type PostgresServer, startPostgresServer } from "../db/postgres-server.ts";

/** Under DATA_DIR: the local Workcell's PostgreSQL (cluster, socket, server log). */
export const LOCAL_POSTGRES_DIR = "postgres";
/** Under DATA_DIR: where versions before decision 0092 kept their PGlite database. */
export const LEGACY_PGLITE_DIR = "pg";
/** Siblings of the server's directory that must stay private when DATA_DIR is opened for traversal. */
const PRIVATE_SIBLINGS = ["fauxqs", "s3", "data-root"];

/** The data directory holds an earlier version's PGlite database, which PostgreSQL cannot read. */
export class LegacyPgliteDataError extends Error {
  constructor(dataDir: string) {
    super(
      [
        `${join(dataDir, LEGACY_PGLITE_DIR)} holds the database of an earlier Workcell (PGlite, embedded in the process).`,
        "The local Workcell now runs PostgreSQL itself (docs/decisions/0092), which cannot read that format.",
        `To start fresh, move the whole data directory aside (threads, files and secrets stay there): mv ${dataDir} ${dataDir}.pglite`,
        "then start again. To keep working on the old data, run the previous release against it.",
      ].join("\n"),
    );
    this.name = "LegacyPgliteDataError";
  }
}

/**
 * Starts the local Workcell's PostgreSQL with its data under DATA_DIR/postgres (initdb on
 * first start). Refuses a data directory that holds only an earlier version's PGlite
 * database (LegacyPgliteDataError, nothing changed). As root the server runs as the
 * `postgres` user, so DATA_DIR becomes traversable (0711) and its other parts stay 0700.
 */
export async function startLocalPostgres(dataDir: string, logger: Logger): Promise<PostgresServer> {
  const dir = join(dataDir, LOCAL_POSTGRES_DIR);
  if (!(await exists(join(dir, "data", "PG_VERSION")))) {
    if (await exists(join(dataDir, LEGACY_PGLITE_DIR, "PG_VERSION"))) {
      throw new LegacyPgliteDataError(dataDir);
    }
  }
  if (process.getuid?.() === 0) {
    for (const sibling of PRIVATE_SIBLINGS) {
      await mkdir(join(dataDir, sibling), { recursive: true, mode: 0o700 });
      await chmod(join(dataDir, sibling), 0o700);
    }
    await chmod(dataDir, 0o711);
  }
  const started = performance.now();
  const server = await startPostgresServer({ dir });
  logger.info(
    { created: server.created, ms: Math.round(performance.now() - started) },
    "local PostgreSQL started",
  );
  return server;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
