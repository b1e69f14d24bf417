import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createDb, type PostgresDb } from "../../shared/db/client.ts";
import { startPostgresCluster } from "../setup/postgres-cluster.ts";
import { prepareTemplateDatabase, templateDatabaseName } from "../setup/template-database.ts";

/** What a bench that drives the agent-host's parts runs on: its own Postgres and data root. */
export type BenchStack = {
  /** On a freshly migrated database of a cluster only this bench uses. */
  db: PostgresDb;
  /** Its connection URL (for a child process of the bench). */
  url: string;
  /** An empty directory, removed by `stop`. */
  dataRoot: string;
  stop(): Promise<void>;
};

/**
 * Starts a private Postgres cluster, migrates its template database and opens a pool on
 * it, with an empty data root. If any step fails, what was started is stopped before the
 * error is thrown, so a bench's `finally` only ever has a whole stack to stop.
 */
export async function startBenchStack(options: { maxConnections: number }): Promise<BenchStack> {
  const cluster = await startPostgresCluster();
  let dataRoot: string | undefined;
  let sql: postgres.Sql | undefined;
  const stop = async () => {
    await sql?.end({ timeout: 5 });
    if (dataRoot) await rm(dataRoot, { recursive: true, force: true });
    await cluster.stop();
  };
  try {
    dataRoot = await mkdtemp(join(tmpdir(), "workcell-bench-"));
    await prepareTemplateDatabase(cluster.adminUrl);
    const url = new URL(cluster.adminUrl);
    url.pathname = `/${templateDatabaseName}`;
    sql = postgres(url.toString(), { max: options.maxConnections, onnotice: () => {} });
    return { db: createDb(sql), url: url.toString(), dataRoot, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The offline sandbox image `scripts/ensure-system.sh` builds (infra/sandbox-image). */
export async function sandboxTestImage(): Promise<string> {
  const spec = JSON.parse(
    await readFile(new URL("../../infra/sandbox-image/test-image.json", import.meta.url), "utf8"),
  ) as { name: string };
  return spec.name;
}
