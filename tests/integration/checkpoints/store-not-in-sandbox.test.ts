import { randomUUID } from "node:crypto";
import { chown, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCheckpointStore } from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../../agent-host/checkpoints/checkpoint-syscalls.ts";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import type { SandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import { createLibcSyscalls, createPathResolver } from "../../../agent-host/workspace/index.ts";
import { type ManagerWorld, managerWorld, TIERS } from "../sandbox/manager-fixture.ts";
import { GEM, materializeWorkdir } from "../sandbox/sandbox-fixture.ts";

const signal = () => AbortSignal.timeout(60_000);

// docs/architecture.md §16: the store is never mounted into a sandbox. A checkpoint of the
// sandbox's own Workdir, holding a file with a unique name, is taken on the host; from
// inside each tier neither that name nor the store directory nor a mount of it is found.
describe.each(TIERS)("the checkpoint store seen from a sandbox (%s tier)", (tier) => {
  let world: ManagerWorld;
  let manager: SandboxManager;
  let handle: SandboxHandle;
  const uid = "alice";
  const workdirPath = `projects/${randomUUID()}`;
  const marker = `ckpt-marker-${randomUUID().slice(0, 8)}.txt`;
  let checkpointId: string;

  beforeAll(async () => {
    world = await managerWorld({ keepWarmMs: 60_000 }, tier);
    manager = world.manager();
    const workspace = await materializeWorkdir(world.dataRoot.path, uid, workdirPath);
    await writeFile(join(workspace, workdirPath, marker), "checkpointed");
    await chown(join(workspace, workdirPath, marker), GEM, GEM);
    // The control: a file the sandbox must see, found by the same search.
    await writeFile(join(workspace, workdirPath, `control-${marker}`), "visible");
    await chown(join(workspace, workdirPath, `control-${marker}`), GEM, GEM);
    const sys = createLibcSyscalls();
    const store = createCheckpointStore({
      dataRoot: world.dataRoot.path,
      sys,
      resolver: createPathResolver(sys),
      cp: createCheckpointSyscalls(),
      mode: "copy",
      maxEntries: 10_000,
      maxDepth: 64,
    });
    checkpointId = randomUUID();
    await store.take(uid, workdirPath, checkpointId, signal());
    // The Workdir's own copy goes: the only file of that name left is the checkpoint's.
    await rm(join(workspace, workdirPath, marker));
    const out = await manager.acquire(
      { uid, runtimeScopeId: randomUUID(), workdirPath, fileView: "workdir" },
      signal(),
    );
    if (!out.ok) throw new Error(`acquire refused: ${JSON.stringify(out)}`);
    handle = out.handle;
  }, 120_000);
  afterAll(async () => {
    await world?.cleanup();
  });

  async function sh(script: string) {
    const out = await manager.exec(handle, { cmd: ["sh", "-c", script] }, signal());
    if (!out.ok) throw new Error("sandbox gone");
    return { code: out.result.exitCode, out: out.result.stdout.bytes.toString() };
  }

  it("finds neither the checkpoint's files, nor the store, nor a mount of it", async () => {
    const search = (name: string) =>
      sh(
        `find / -xdev \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -name '${name}' -print 2>/dev/null; ` +
          `for d in $(awk '{print $5}' /proc/self/mountinfo); do find "$d" -xdev -name '${name}' -print 2>/dev/null; done; true`,
      );
    expect((await search(`control-${marker}`)).out).toContain(`control-${marker}`);
    expect((await search(marker)).out.trim()).toBe("");
    const mounts = await sh("cat /proc/self/mountinfo");
    expect(mounts.out).not.toContain("/checkpoints");
    expect(mounts.out).not.toContain(checkpointId);
    const direct = await sh(`ls ${join(world.dataRoot.path, "checkpoints")} 2>&1; echo "rc=$?"`);
    expect(direct.out).not.toContain(checkpointId);
    expect(direct.out).toMatch(/rc=[1-9]/);
  });
});
