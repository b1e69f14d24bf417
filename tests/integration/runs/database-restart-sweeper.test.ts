import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import pino from "pino";
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { databaseServerUpForMs } from "../../../functions/runs/database-uptime.ts";
import { sweepRuns } from "../../../functions/runs/sweep-runs.ts";
import { type PostgresServer, startPostgresServer } from "../../../infra/db/postgres-server.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { nodes, sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { freePort } from "../../setup/free-port.ts";
import { prepareTemplateDatabase, templateDatabaseName } from "../../setup/template-database.ts";
import { freshQueue, sqsClient } from "../../support/aws.ts";
import { pollFor } from "../../support/poll-until.ts";

// Decision 0168: the stateless cron sweepers (Lambda, Workers) keep no memory of an outage,
// so after a PostgreSQL restart every node's last heartbeat looked older than the node TTL
// and live nodes were judged lost. With `sinceDatabaseStart` silence counts from
// max(last heartbeat, pg_postmaster_start_time()): a node is swept only once it has been
// silent for its TTL while the database was up. A private cluster, since the test restarts it.

/** The node TTL (and lease TTL) the sweeper judges by. */
const TTL_MS = 15_000;
const logger = pino({ level: "silent" });
const UID = "u-restart";

let dir: string;
let port: number;
let server: PostgresServer;
let client: postgres.Sql;
let db: Db;

const start = () =>
  startPostgresServer({ dir, tcpPort: port, throwAway: true, settings: { max_connections: "50" } });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "workcell-pg-restart-"));
  port = await freePort();
  server = await start();
  await prepareTemplateDatabase(server.url());
}, 120_000);
afterAll(async () => {
  await client?.end({ timeout: 1 });
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A node silent for an hour (its last beat long before the restart) with a live sandbox. */
async function staleNode(nodeId: string): Promise<string> {
  await db.insert(nodes).values({
    nodeId,
    dataPlaneUrl: `http://${nodeId}.invalid`,
    heartbeatAt: sql`now() - interval '1 hour'`,
  });
  const scope = crypto.randomUUID();
  const id = sandboxId(UID, scope);
  await db.insert(sandboxes).values({
    sandboxId: id,
    uid: UID,
    runtimeScopeId: scope,
    workdirPath: "projects/00000000-0000-4000-8000-000000000000",
    nodeId,
    state: "running",
    instanceId: `c-${nodeId}`,
  });
  return id;
}

it("after a restart, a node silent since before it is swept only once the database has been up for the node TTL", async () => {
  const connect = () => {
    client = postgres(server.url(templateDatabaseName), { max: 2, onnotice: () => {} });
    db = createDb(client);
  };
  connect();
  const staleSandbox = await staleNode(`node-${crypto.randomUUID()}`);
  // The restart: every heartbeat now predates the server's start.
  await client.end({ timeout: 1 });
  await server.stop();
  server = await start();
  connect();

  const sqs = sqsClient();
  const deps = {
    db,
    runQueue: createSqsRunQueue({ sqs, queueUrl: await freshQueue(sqs, "restart") }),
    logger,
    nodeTtlMs: TTL_MS,
    leaseTtlMs: TTL_MS,
    sinceDatabaseStart: true,
  };
  const state = async () => {
    const [row] = await db
      .select({ state: sandboxes.state })
      .from(sandboxes)
      .where(eq(sandboxes.sandboxId, staleSandbox));
    return row?.state;
  };
  // Each sweep, with how long the server had been up just before and just after it.
  const sweep = async () => {
    const before = await databaseServerUpForMs(db, AbortSignal.timeout(10_000));
    await sweepRuns(deps, AbortSignal.timeout(10_000));
    const after = await databaseServerUpForMs(db, AbortSignal.timeout(10_000));
    return { before, after, state: await state() };
  };

  // Right after the restart: the node's hour of silence counts for nothing.
  const first = await sweep();
  expect(first.before).toBeLessThan(TTL_MS);
  if (first.after < TTL_MS) expect(first.state).toBe("running");

  // It is swept, and never before the database had been up for the TTL.
  const swept = await pollFor(
    async () => {
      const s = await sweep();
      if (s.before >= TTL_MS) expect(s.state).toBe("failed");
      if (s.state === "failed") expect(s.after).toBeGreaterThanOrEqual(TTL_MS);
      return s;
    },
    (s) => s.state === "failed",
    { what: "the silent node swept after the grace", intervalMs: 1_000 },
  );
  expect(swept.state).toBe("failed");
}, 120_000);
