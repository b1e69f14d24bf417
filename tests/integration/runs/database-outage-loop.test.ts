import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import type postgres from "postgres";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { ScriptedStep } from "../../../agent-host/runs/agent/index.ts";
import { createDb } from "../../../shared/db/client.ts";
import { executionLeases } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { failExpiredLeases } from "../../../shared/runs/fail-expired-leases.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { proxiedPostgres } from "../../support/proxied-postgres.ts";
import { expectGapFree, type Project, type RunWorld, runWorld, UID } from "./run-harness.ts";
import { gate, scriptedModels } from "./scripted-models.ts";

// Issue 38, decision 0148: a PostgreSQL outage longer than the run lease while the agent
// loop is between commands (the model thinking) suspends the run instead of stopping it;
// the first heartbeat that answers re-checks the fence. The worker reaches the database
// through a proxy the test cuts (every connection dropped, new ones refused) after the
// run's first command, until the lease has expired in the database's clock; the model's
// second turn waits for the test meanwhile.

let world: RunWorld;
let proxy: PausableProxy;
let client: postgres.Sql;

const LIMITS = {
  leaseTtlMs: 4_000,
  heartbeatIntervalMs: 500,
  databaseRetryAttemptMs: 1_000,
  databaseRetryMaxDelayMs: 300,
};

/** The model's second turn: waits for `release`, then runs `command`; records an abort. */
function thenRun(release: Promise<void>, command: string, aborted: { seen: boolean }) {
  return {
    respond: async (_request, signal) => {
      signal.addEventListener("abort", () => {
        aborted.seen = true;
      });
      await Promise.race([
        release,
        new Promise((resolve) => signal.addEventListener("abort", resolve)),
      ]);
      signal.throwIfAborted();
      return {
        ok: true,
        turn: {
          message: {
            role: "assistant",
            content: "",
            toolCalls: [{ id: "second", name: "bash", arguments: JSON.stringify({ command }) }],
          },
          finishReason: "tool_calls",
        },
      };
    },
  } satisfies ScriptedStep;
}

let release: ReturnType<typeof gate>;
let aborted: { seen: boolean };
let models: ReturnType<typeof scriptedModels>;

beforeEach(async () => {
  world = await runWorld();
  ({ proxy, client } = await proxiedPostgres(world.database.url));
  release = gate();
  aborted = { seen: false };
  models = scriptedModels(() => [
    { toolCalls: [{ name: "bash", arguments: { command: "echo one >> loop.txt" } }] },
    thenRun(release.promise, "echo two >> loop.txt", aborted),
    { text: "done" },
  ]);
  await world.worker({
    listen: false,
    limits: LIMITS,
    model: models.factory,
    extra: { db: createDb(client) },
  });
});
afterEach(async () => {
  proxy.resume();
  release.open();
  await world.cleanup();
  await client.end({ timeout: 1 }).catch(() => {});
  await proxy.close();
});

async function leaseLeftMs(runId: string): Promise<number> {
  const [row] = await world.database.sql<{ left: number }[]>`
    select extract(epoch from lease_expires_at - now()) * 1000 as left
    from agent_runs where run_id = ${runId}`;
  return Number(row?.left);
}

const fileOf = (project: Project) =>
  join(world.dataRoot.path, "users", uidDirname(UID), "workspace", project.workdirPath, "loop.txt");

/** Runs the first command, then cuts the database past the lease while the model thinks. */
async function outagePastTheLease(): Promise<[string, Project]> {
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), "two commands");
  // The model's second turn has begun: the first command ran and its batch is committed.
  await pollUntil(() => (models.clients[0]?.client.requests.length ?? 0) >= 2, 30_000);
  proxy.cut();
  // Expired in the database's clock: the worker's silence timer (armed from before its
  // last good beat was sent) has fired before that.
  await pollUntil(async () => (await leaseLeftMs(runId)) < -LIMITS.heartbeatIntervalMs, 30_000);
  return [runId, project];
}

it("PostgreSQL down longer than the lease between commands: the run waits, the fence holds, it succeeds", async () => {
  const [runId, project] = await outagePastTheLease();
  proxy.resume();
  release.open();

  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "succeeded", attempt: 1, error: null });
  expect(aborted.seen).toBe(false);
  expect(await readFile(fileOf(project), "utf8")).toBe("one\ntwo\n");
  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.filter((e) => e.type === "tool.completed")).toHaveLength(2);
  expect(
    await world.db.select().from(executionLeases).where(eq(executionLeases.runId, runId)),
  ).toEqual([]);
});

it("the sweeper reached the database meanwhile (a partition) and ended the run: it stops and runs nothing more", async () => {
  const [runId, project] = await outagePastTheLease();
  // The control plane's sweeper, which still reaches the database, decides.
  expect(await failExpiredLeases(world.db)).toHaveLength(1);
  const events = await world.events(runId);
  proxy.resume();
  // The worker's first beat that answers finds the fence gone and stops the run.
  await pollUntil(() => aborted.seen, 30_000);
  release.open();

  expect(await world.run(runId)).toMatchObject({
    status: "failed",
    attempt: 1,
    error: { code: "node_lost" },
  });
  expect(await readFile(fileOf(project), "utf8")).toBe("one\n");
  // Nothing written for the run after the sweeper's ending.
  expect(await world.events(runId)).toEqual(events);
  expect(events.at(-1)?.type).toBe("run.completed");
});
