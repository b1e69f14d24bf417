import { execFile, spawn } from "node:child_process";
import { constants } from "node:fs";
import {
  lstat,
  mkdir,
  open,
  readFile,
  readlink,
  realpath,
  symlink,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parseMountInfo } from "../../../agent-host/quota/detect-quota-enforcement.ts";
import {
  nodeBindStagingDir,
  type StagedBinds,
  stageBinds,
} from "../../../agent-host/sandbox/container/staged-binds.ts";
import { requireDocker } from "../../support/docker.ts";
import {
  type FunctionsHarness,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import { uniqueNodeId } from "../sandbox/sandbox-fixture.ts";
import { type ContainerNode, startContainerNode } from "./node-agent-host.ts";

// Issue 12 / decision 0060: a create that dies between staging its binds and releasing
// them leaves root-only mounts of a user's directory below the node's staging root. The
// node's next start removes them, and nothing else: not another node's live staging
// (whose id starts with this node's), not what a stray symlink in the staging root points
// at, not the user's files behind the bind.

const run = promisify(execFile);
const { docker, image } = requireDocker();
let h: FunctionsHarness;

beforeAll(async () => {
  h = await startFunctionsHarness();
});
afterAll(async () => {
  await h?.close();
});

async function mountPoints(): Promise<string[]> {
  return parseMountInfo(await readFile("/proc/self/mountinfo", "utf8")).map((m) => m.mountPoint);
}

/** Runs the child until it has staged, then kills it with SIGKILL: a crash mid-create. */
async function crashWhileStaged(stagingRoot: string, name: string, dir: string): Promise<void> {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, "stage-and-die.ts"), stagingRoot, name, dir],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("staged\n")) resolve();
    });
    child.once("exit", (code) =>
      reject(new Error(`stage-and-die exited (${code}) before staging`)),
    );
  });
  child.kill("SIGKILL");
  await exited;
}

type Scenario = {
  /** The user's workspace, bound by both the crashed create and the live one. */
  workspace: string;
  /** Where the crashed create staged, and under which container name. */
  crashIn: string;
  crashName: string;
  /** The other node's live staging directory (its container is `workcell-live-g1`). */
  liveIn: string;
  /** Planted before the node starts: what the sweep must leave alone. */
  plant(): Promise<void>;
};

/** A user workspace holding a file and an empty directory, both checked afterwards. */
async function userWorkspace(root: string, user: string): Promise<string> {
  const workspace = join(root, user, "workspace");
  await mkdir(join(workspace, "keep-empty"), { recursive: true });
  await writeFile(join(workspace, "marker"), "the user's file\n");
  return workspace;
}

/**
 * Leaves a crashed create's bind and another node's live one in place, checks both are
 * real mounts showing the user's file, starts a node, and hands what it found to
 * `check`. Whatever happens, the live staging is released and the crashed bind unmounted,
 * so the data root's removal never deletes through a bind.
 */
async function sweepAfterCrash(
  scenario: Scenario,
  nodeId: string,
  check: (mounts: { after: string[]; crashed: string; liveMount: string }) => Promise<void>,
): Promise<void> {
  const crashed = join(scenario.crashIn, scenario.crashName, "workspace");
  const liveMount = join(scenario.liveIn, "workcell-live-g1", "workspace");
  let live: StagedBinds<"workspace"> | undefined;
  let node: ContainerNode | undefined;
  const handle = await open(scenario.workspace, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await crashWhileStaged(scenario.crashIn, scenario.crashName, scenario.workspace);
    await scenario.plant();
    live = await stageBinds(
      scenario.liveIn,
      "workcell-live-g1",
      { workspace: handle },
      AbortSignal.timeout(30_000),
    );
    // The leftover is real: the dead process's bind is still mounted and shows the user's file.
    expect(await mountPoints()).toEqual(expect.arrayContaining([crashed, liveMount]));
    expect(await readFile(join(crashed, "marker"), "utf8")).toBe("the user's file\n");

    node = await startContainerNode(h, { docker, image, nodeId });

    const after = await mountPoints();
    await check({ after, crashed, liveMount });
    // The crash leftover's directory is gone; the other node's live staging, and the
    // user's files behind both binds, are untouched.
    await expect(lstat(join(scenario.crashIn, scenario.crashName))).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(after).toContain(liveMount);
    expect(await readFile(join(liveMount, "marker"), "utf8")).toBe("the user's file\n");
    expect(await readFile(join(scenario.workspace, "marker"), "utf8")).toBe("the user's file\n");
    expect((await lstat(join(scenario.workspace, "keep-empty"))).isDirectory()).toBe(true);
  } finally {
    await node?.stop();
    await live?.release();
    await handle.close();
    await run("umount", [crashed]).catch(() => {});
  }
}

it("a node's start removes the staging mounts a crashed create left, and nothing else", async () => {
  const root = await realpath(h.dataRoot);
  const nodeId = uniqueNodeId();
  const mine = nodeBindStagingDir(root, nodeId);
  // Outside every staging directory, reachable only through a symlink planted in mine.
  const outside = join(root, "outside");
  await mkdir(join(outside, "keep-empty"), { recursive: true });

  await sweepAfterCrash(
    {
      workspace: await userWorkspace(root, "sweep-user"),
      crashIn: mine,
      crashName: "workcell-crashed-g1",
      // Another node on the same data root and kernel, its id extending this one's.
      liveIn: nodeBindStagingDir(root, `${nodeId}-2`),
      plant: () => symlink(outside, join(mine, "stray-link")),
    },
    nodeId,
    async ({ after }) => {
      // Everything below this node's staging root is unmounted.
      expect(after.filter((m) => m === mine || m.startsWith(`${mine}/`))).toEqual([]);
      // The symlink and what it points at are unchanged.
      expect(await readlink(join(mine, "stray-link"))).toBe(outside);
      expect((await lstat(join(outside, "keep-empty"))).isDirectory()).toBe(true);
    },
  );
});

// Decision 0073: staging from before per-node directories (0060) sits directly below
// sandbox-binds as <container name>/<key>. Any node's start clears it, and only it: not a
// node directory whose id looks like a container name, not an entry holding anything but
// the staged keys, not a symlink named like one.
it("a node's start also removes staging left in the layout from before per-node staging", async () => {
  const root = await realpath(h.dataRoot);
  const nodeId = uniqueNodeId();
  const bindsRoot = join(root, "sandbox-binds");
  const outside = join(root, "legacy-outside");
  await mkdir(join(outside, "workspace"), { recursive: true });
  await writeFile(join(outside, "outside-marker"), "outside\n");
  // Named like a container but holding something else: not staging, left alone.
  const notStaging = join(bindsRoot, "workcell-notstaging-g1");
  await mkdir(join(notStaging, "workspace"), { recursive: true });
  await writeFile(join(notStaging, "notes"), "not a staged key\n");

  await sweepAfterCrash(
    {
      workspace: await userWorkspace(root, "legacy-user"),
      crashIn: bindsRoot,
      crashName: "workcell-legacy-g1",
      // A live node whose id starts like a container name: its dir holds container names.
      liveIn: join(bindsRoot, `workcell-${nodeId}`),
      plant: () => symlink(outside, join(bindsRoot, "workcell-link-g1")),
    },
    nodeId,
    async ({ after, crashed }) => {
      expect(after).not.toContain(crashed);
      expect(await readFile(join(notStaging, "notes"), "utf8")).toBe("not a staged key\n");
      expect((await lstat(join(notStaging, "workspace"))).isDirectory()).toBe(true);
      expect(await readlink(join(bindsRoot, "workcell-link-g1"))).toBe(outside);
      expect((await lstat(join(outside, "workspace"))).isDirectory()).toBe(true);
      expect(await readFile(join(outside, "outside-marker"), "utf8")).toBe("outside\n");
    },
  );
});
