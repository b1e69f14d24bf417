import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, expect, it } from "vitest";
import { sandboxes } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type RunWorld, runWorld } from "./run-harness.ts";

// Issue 41 item 2 (decision 0185) through whole runs: a new thread's first run on the
// process tier takes a blank from the node's warm pool (made at the manager's start),
// runs as the sandbox user in its own UserWorkspace with an empty /tmp, and the pool is
// refilled after it.

let world: RunWorld | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

it("a new thread's first run takes a pooled blank and runs in it as in a sandbox made in full", async () => {
  // Kept warm after the run, so its generation (and the blank's namespace in it) is there to look at.
  const w = await runWorld({ processPoolSize: 2, keepWarmMs: 60_000 }, "process");
  world = w;
  const pool = w.driver.pool;
  const stateDir = w.childTier.process?.stateDir;
  if (!pool || !stateDir) throw new Error("the process tier has no pool");
  const blanks = async () =>
    (await readdir(stateDir)).filter((name) => name.startsWith("process-pool-")).sort();
  const ownerOf = (name: string) => readFile(join(stateDir, name, "userns-owner"), "utf8");
  await w.sandboxManager.start(AbortSignal.timeout(60_000));
  await pollUntil(async () => pool.held() === 2 && (await blanks()).length === 2, {
    what: "the pool filled at start",
  });
  await pool.settled();
  const before = await blanks();
  const owners = new Map(
    await Promise.all(before.map(async (b) => [await ownerOf(b), b] as const)),
  );

  await w.worker();
  const project = await w.project({ uid: "pool-user" });
  const runId = await w.submit(
    await w.thread(project),
    "{ id -u; ls -A /tmp; ls /home/gem/user-data; } > out.txt",
  );
  const run = await w.waitForRun(runId, undefined, 60_000);
  expect(run.status).toBe("succeeded");

  // The run's generation is one of the blanks that were ready: its namespace's owner.
  const [row] = await w.db.select().from(sandboxes).where(eq(sandboxes.uid, "pool-user"));
  if (!row?.instanceId) throw new Error("the run left no sandbox row");
  const taken = owners.get(await ownerOf(row.instanceId));
  expect(taken).toBeDefined();
  expect(await blanks()).not.toContain(taken);
  const out = await readFile(
    join(
      w.dataRoot.path,
      "users",
      uidDirname("pool-user"),
      "workspace",
      project.workdirPath,
      "out.txt",
    ),
    "utf8",
  );
  // The sandbox user, an empty /tmp, and only this user's own Workdir in the workspace.
  expect(out).toBe(`1000\n${project.workdirPath.split("/")[0]}\n`);
  // The pool is refilled after the run's create (within the budget).
  await pollUntil(async () => pool.held() === 2, { what: "the pool refilled" });
});
