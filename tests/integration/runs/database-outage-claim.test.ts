import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type postgres from "postgres";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createDb } from "../../../shared/db/client.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { proxiedPostgres } from "../../support/proxied-postgres.ts";
import { type RunWorld, runWorld, UID } from "./run-harness.ts";
import { scriptedModels } from "./scripted-models.ts";

// Issue 38, decision 0150: a claim whose COMMIT reached PostgreSQL but whose answer the
// node never got (the connection cut right after it) is looked up and taken up by the
// node that made it, instead of staying `running` in its name, never executed, until the
// sweeper fails it node_lost. The worker reaches the database through a proxy that lets
// the claim's COMMIT through, holds its answer, and is then cut.

let world: RunWorld;
let proxy: PausableProxy;
let client: postgres.Sql;
/** Set once the claim's UPDATE went through: the next COMMIT on the wire is the claim's. */
let claimSent = false;
let commitHeld = false;

const isClaimUpdate = (text: string) =>
  text.includes('update "agent_runs"') && text.includes('"waiting_since" is not null');

beforeEach(async () => {
  world = await runWorld();
  claimSent = false;
  commitHeld = false;
  ({ proxy, client } = await proxiedPostgres(world.database.url, {
    pauseReplyTo: (chunk) => {
      const text = chunk.toString("latin1");
      if (!claimSent && isClaimUpdate(text)) claimSent = true;
      if (claimSent && !commitHeld && /\bcommit\b/i.test(text) && !isClaimUpdate(text)) {
        commitHeld = true;
        return true;
      }
      return false;
    },
  }));
  await world.worker({
    listen: false,
    limits: { leaseTtlMs: 6_000, heartbeatIntervalMs: 1_000, databaseRetryMaxDelayMs: 300 },
    model: scriptedModels(() => [
      { toolCalls: [{ name: "bash", arguments: { command: "echo ran >> claim.txt" } }] },
      { text: "done" },
    ]).factory,
    extra: { db: createDb(client) },
  });
});
afterEach(async () => {
  proxy.resume();
  await world.cleanup();
  await client.end({ timeout: 1 }).catch(() => {});
  await proxy.close();
});

it("the claim's COMMIT applied, its answer lost: the node takes the run up and it succeeds on its first attempt", async () => {
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), "one command");
  // The COMMIT went through and its answer is held: the claim is in the database only.
  await pollUntil(() => commitHeld, 30_000);
  await pollUntil(async () => (await world.run(runId)).status === "running", 30_000);
  expect(await world.run(runId)).toMatchObject({ status: "running", attempt: 1 });
  proxy.cut();
  proxy.resume();

  const run = await world.waitForRun(runId, undefined, 40_000);
  expect(run).toMatchObject({ status: "succeeded", attempt: 1, error: null });
  const file = join(
    world.dataRoot.path,
    "users",
    uidDirname(UID),
    "workspace",
    project.workdirPath,
    "claim.txt",
  );
  expect(await readFile(file, "utf8")).toBe("ran\n");
});
