import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { overrunBoundBytes } from "../../../agent-host/quota/command-quota-watch.ts";
import { createRunQuotaGate } from "../../../agent-host/quota/run-quota-gate.ts";
import { createAccountingQuota } from "../../../agent-host/quota/workspace-quota.ts";
import { measureWorkspaceUsage } from "../../../agent-host/quota/workspace-usage.ts";
import { putLimitsOverride } from "../../../functions/limits/user-limits-store.ts";
import { SANDBOX_USER_DATA_MOUNT } from "../../../shared/paths/runtime-paths.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";
import { type RunWorld, runWorld } from "./run-harness.ts";
import { scriptedModels, toolOutputs } from "./scripted-models.ts";

// Issue 37 item 2 (decision 0180): under the default `workspace` file view a command may
// write anywhere in its UserWorkspace, not only in its Workdir. Looks that peeked the
// Workdir alone (0163) never saw such writes: 1 GiB written to a sibling directory ended
// 1014 MiB past a 10 MiB quota. The watch now peeks the whole UserWorkspace. Real
// sandbox, real files, the gate agent-host.ts wires over a real accounting.

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

const QUOTA = 10 * 1024 * 1024;
/** 1 GiB into a directory beside the Workdir, not in it. */
const FLOOD = `mkdir -p ${SANDBOX_USER_DATA_MOUNT}/elsewhere && dd if=/dev/zero of=${SANDBOX_USER_DATA_MOUNT}/elsewhere/big bs=1M count=1024 2>/dev/null; echo wrote`;

function workspaceOnHost(uid: string): string {
  return join(world.dataRoot.path, "users", uidDirname(uid), "workspace");
}

it("a command writing 1 GiB outside its Workdir (workspace view) against a 10 MiB quota is stopped within the overrun bound; the next command is refused; another uid's run is unaffected", async () => {
  const models = scriptedModels(() => [
    { toolCalls: [{ name: "bash", arguments: { command: FLOOD } }] },
    { toolCalls: [{ name: "bash", arguments: { command: "touch marker; echo touched" } }] },
    { text: "done" },
  ]);
  const accounting = createAccountingQuota({ dataRoot: world.dataRoot.path });
  await world.worker({
    model: models.factory,
    extra: { quota: createRunQuotaGate({ db: world.db, accounting, logger: silentLogger }) },
  });
  await putLimitsOverride(world.db, "flood-a", { workspace_bytes: QUOTA });
  const project = await world.project({ uid: "flood-a" });
  const other = await world.project({ uid: "flood-b" });

  const runId = await world.submit(await world.thread(project), "flood it");
  const otherRun = await world.submit(await world.thread(other), "flood it too");
  const run = await world.waitForRun(runId, undefined, 120_000);
  expect(run.status).toBe("succeeded");

  const used = await measureWorkspaceUsage(workspaceOnHost("flood-a"), AbortSignal.timeout(30_000));
  const overrun = used.bytes - QUOTA;
  const bound = overrunBoundBytes({ workspace_bytes: QUOTA, workspace_inodes: 1_000_000 });
  console.info(
    `issue 37 item 2, outside the Workdir: overrun ${(overrun / 2 ** 20).toFixed(1)} MiB past a 10 MiB quota (bound ${bound / 2 ** 20} MiB; Workdir peeks: 1014 MiB)`,
  );
  expect(used.bytes).toBeGreaterThan(QUOTA);
  expect(overrun).toBeLessThanOrEqual(bound);
  expect(statSync(join(workspaceOnHost("flood-a"), "elsewhere", "big")).size).toBeLessThan(
    QUOTA + bound,
  );

  const outputs = toolOutputs(await world.events(runId));
  expect(outputs[0]).toContain("This command was stopped");
  // dd's "echo wrote" never ran: the command was stopped, not ended.
  expect(outputs[0]).not.toMatch(/^wrote$/m);
  // The next command is refused as before and never ran.
  expect(outputs[1]).toContain("quota_exceeded");
  expect(outputs[1]).not.toContain("touched");
  // The other uid, default quota, same moment: its gigabyte is within its quota.
  const b = await world.waitForRun(otherRun, undefined, 120_000);
  expect(b.status).toBe("succeeded");
  const otherOutputs = toolOutputs(await world.events(otherRun));
  expect(otherOutputs[0]).toContain("wrote");
  expect(otherOutputs[1]).toContain("touched");
  expect(statSync(join(workspaceOnHost("flood-b"), "elsewhere", "big")).size).toBe(2 ** 30);
}, 240_000);
