import { mkdir, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { createHostMounts } from "../../../agent-host/sandbox/instance/host-mounts.ts";
import { reachableStateDir } from "../../../agent-host/sandbox/process/state-dir-alias.ts";
import { unmountLeftovers } from "../../../infra/split/leftover-mounts.ts";

// A split node killed with SIGKILL leaves its process tier's mounts (a pool blank's tmpfs
// inside the state directory's alias, and the alias itself); stopping the split deployment
// removes them (infra/split/leftover-mounts.ts). Real mounts, as root.

const mounts = createHostMounts();
let stateRoot: string | undefined;
afterEach(async () => {
  if (stateRoot) await unmountLeftovers(stateRoot, mounts);
  if (stateRoot) await rm(stateRoot, { recursive: true, force: true });
  stateRoot = undefined;
});

const mountPoints = async () =>
  (await readFile("/proc/self/mountinfo", "utf8")).split("\n").map((l) => l.split(" ")[4] ?? "");

it("unmounts what a killed node left below its state directory and its alias, and nothing else", async () => {
  stateRoot = await mkdtemp(join(tmpdir(), "workcell-split-state-"));
  const nodeDir = join(stateRoot, "node-a");
  await mkdir(nodeDir, { mode: 0o711 });
  // stateRoot is 0700, so the node's state directory is reached through an alias (0144).
  const alias = await reachableStateDir(nodeDir, mounts);
  expect(alias).not.toBe(nodeDir);
  const blankTmp = join(alias, "process-pool-left", "tmp");
  await mkdir(blankTmp, { recursive: true });
  mounts.tmpfs(blankTmp, "size=1m");
  // Someone else's mount beside it (another Workcell's state directory) stays.
  const other = await mkdtemp(join(tmpdir(), "workcell-split-other-"));
  mounts.tmpfs(other, "size=1m");
  try {
    expect(await mountPoints()).toEqual(expect.arrayContaining([alias, blankTmp]));

    await unmountLeftovers(stateRoot, mounts);

    const left = await mountPoints();
    expect(left.filter((p) => p === alias || p.startsWith(`${alias}/`))).toEqual([]);
    expect(left.filter((p) => p.startsWith(`${stateRoot}/`))).toEqual([]);
    expect(left).toContain(other);
    await rm(stateRoot, { recursive: true });
    await expect(stat(stateRoot)).rejects.toMatchObject({ code: "ENOENT" });
  } finally {
    await mounts.unmount(other, { lazy: true });
    await rm(other, { recursive: true, force: true });
  }
});
