import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, expect, it } from "vitest";
import { sandboxes } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { type Project, type RunWorld, runWorld } from "./run-harness.ts";

// Issue 37 item 1 (decision 0142) through whole runs: when the node's live sandboxes hold
// its tmpfs budget, another run fails with a clear refusal before anything of it ran, and
// the run holding the budget is not affected.

let world: RunWorld | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

/** /tmp + home tmpfs of one test sandbox (16 + 16 MiB). */
const PER_SANDBOX = 32 * 1024 * 1024;
const GATED = "until [ -e gate ]; do sleep 0.05; done; echo a > out.txt";

function hostPath(w: RunWorld, project: Project, name: string): string {
  return join(
    w.dataRoot.path,
    "users",
    uidDirname(project.uid),
    "workspace",
    project.workdirPath,
    name,
  );
}

it("a run that would exceed the node's sandbox tmpfs budget fails sandbox_memory_budget having run nothing; the other tenant's run goes on", async () => {
  const w = await runWorld({ tmpfsBudgetBytes: 1.5 * PER_SANDBOX });
  world = w;
  await w.worker({ limits: { concurrency: 2 } });
  const projectA = await w.project({ uid: "tenant-a" });
  const projectB = await w.project({ uid: "tenant-b" });

  const aRun = await w.submit(await w.thread(projectA), GATED);
  await pollUntil(async () => (await containersOfNode(w.docker, w.nodeId)).length === 1, {
    what: "A's sandbox",
    timeoutMs: 60_000,
    intervalMs: 50,
  });
  const bThread = await w.thread(projectB);
  const b = await w.waitForRun(await w.submit(bThread, "echo b > out.txt"), undefined, 60_000);
  expect(b.status).toBe("failed");
  expect(b.error?.code).toBe("sandbox_memory_budget");
  expect(b.error?.message).toContain("SANDBOX_TMPFS_BUDGET_MB");
  // Nothing of B ran: no sandbox row, no file; A's sandbox is the node's only one.
  expect(await w.db.select().from(sandboxes).where(eq(sandboxes.uid, "tenant-b"))).toEqual([]);
  expect(existsSync(hostPath(w, projectB, "out.txt"))).toBe(false);
  expect(await containersOfNode(w.docker, w.nodeId)).toHaveLength(1);
  expect((await w.run(aRun)).status).toBe("running");

  writeFileSync(hostPath(w, projectA, "gate"), "");
  expect((await w.waitForRun(aRun, undefined, 60_000)).status).toBe("succeeded");
  // A's sandbox is gone or warm (and evictable): B's next turn fits.
  const again = await w.waitForRun(await w.submit(bThread, "echo b2"), undefined, 60_000);
  expect(again.status).toBe("succeeded");
}, 240_000);
