import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ForkWatch, watchForks } from "../../support/fork-watch.ts";
import { freshScope, type ManagerWorld, managerWorld, TIERS } from "./manager-fixture.ts";

// Issue 41 / decision 0119: nothing on a run's path forks agent-host. A fork blocks Node's
// event loop in proportion to the process's memory (44 ms at 750 MB), stalling every run
// on the node; the staged binds' `mount`/`umount` children and the process tier's
// `umount` children at teardown did so on every cold acquire and every teardown.

const signal = () => AbortSignal.timeout(60_000);

describe("the fork watch", () => {
  it("sees a fork made through any child_process entry point", async () => {
    const watch = watchForks();
    try {
      await promisify(execFile)("true", []);
      execFileSync("true");
    } finally {
      watch.stop();
    }
    expect(watch.forks).toEqual(["true", "execFileSync true"]);
  });
});

describe.each(TIERS)("a cold acquire, its first exec and its teardown (%s tier)", (tier) => {
  let world: ManagerWorld;
  let watch: ForkWatch | undefined;

  beforeEach(async () => {
    world = await managerWorld({}, tier);
  });
  afterEach(async () => {
    watch?.stop();
    await world.cleanup();
  });

  it("fork agent-host no times", async () => {
    const manager = world.manager();
    const request = await freshScope(world, "forkless");
    watch = watchForks();
    const acquired = await manager.acquire(request, signal());
    if (!acquired.ok) throw new Error(`acquire refused: ${JSON.stringify(acquired)}`);
    expect(acquired.created).toBe(true);
    const ran = await manager.exec(acquired.handle, { cmd: ["sh", "-c", "echo hi"] }, signal());
    expect(ran.ok && ran.result.stdout.bytes.toString()).toBe("hi\n");
    await manager.destroy(acquired.handle, signal());
    // The teardown really happened: the tier lists nothing of this node.
    expect(await world.sandboxes()).toEqual([]);
    watch.stop();
    expect(watch.forks).toEqual([]);
  });
});
