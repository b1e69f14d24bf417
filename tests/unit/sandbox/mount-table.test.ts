import { describe, expect, test } from "vitest";
import { CONTAINER_EGRESS_MOUNT } from "../../../agent-host/egress/container-egress-dir.ts";
import { containerCreateOptions } from "../../../agent-host/sandbox/container/container-spec.ts";
import {
  EXEC_SHIM_MOUNT,
  MOUNT_TABLE,
  sandboxMounts,
} from "../../../agent-host/sandbox/instance/mount-table.ts";
import { bwrapArgs } from "../../../agent-host/sandbox/process/bwrap-args.ts";
import { FILE_VIEW_VALUES, type FileView } from "../../../shared/paths/file-view.ts";
import {
  runtimeWorkdirPath,
  SANDBOX_HOME,
  SANDBOX_RUNTIME_MOUNT,
  SANDBOX_SKILLS_MOUNT,
  SANDBOX_USER_DATA_MOUNT,
} from "../../../shared/paths/runtime-paths.ts";

// Both tiers' bind lists are built from one mount table (mount-table.ts, decision 0124).
// These read what each tier really hands its runtime (Docker's create request, bwrap's
// command line) and check that a sandbox of either tier sees the same mounts with the
// same modes in each file view; the only differences are the rows the table gives one
// tier alone (the container egress directory, the process tier's exec shim).

const WORKDIR = "work/p1";
const WORKDIR_TARGET = runtimeWorkdirPath(WORKDIR);

type Modes = Map<string, "ro" | "rw">;

/** Target → mode of every mount in a container's create request (binds and tmpfs). */
function containerModes(fileView: FileView): Modes {
  const options = containerCreateOptions(
    {
      sandboxId: "0123456789ab",
      generation: 1,
      uidDirname: "u-alice",
      runtimeScopeId: "00000000-0000-4000-8000-000000000001",
      workdirPath: WORKDIR,
      nodeId: "node-a",
      fileView,
      workspaceHostPath: "/staged/workspace",
      skillsHostPath: "/staged/skills",
      workdirHostPath: "/staged/workdir",
      runtimeHostPath: "/runtime-assets",
      egressHostPath: "/egress/c1",
    },
    {
      image: "sandbox:test",
      networkMode: "none",
      pidsLimit: 256,
      memoryBytes: 1 << 30,
      nanoCpus: 1e9,
      tmpSizeBytes: 1 << 20,
      homeSizeBytes: 1 << 20,
    },
  );
  const modes: Modes = new Map();
  for (const m of options.HostConfig?.Mounts ?? []) {
    modes.set(m.Target, m.ReadOnly ? "ro" : "rw");
  }
  // Its private tmpfs are the process tier's /tmp and home binds (host tmpfs there);
  // /dev/mqueue is a read-only placeholder that hides a filesystem, not a mount to agree on.
  for (const target of Object.keys(options.HostConfig?.Tmpfs ?? {})) {
    if (target !== "/dev/mqueue") modes.set(target, "rw");
  }
  return modes;
}

/** Target → mode of every bind on a process-tier exec's bwrap command line. */
function processModes(fileView: FileView): Modes {
  const args = bwrapArgs({
    sources: {
      workspace: "/state/mnt/user-data",
      skills: "/state/mnt/skills",
      runtime: "/runtime-assets",
      tmp: "/state/tmp",
      home: "/state/home",
      ...(fileView === "workdir" ? { workdir: "/state/mnt/workdir" } : {}),
    },
    execShim: "/usr/lib/workcell/exec-shim",
    ...(fileView === "workdir" ? { workdirTarget: WORKDIR_TARGET } : {}),
  });
  const modes: Modes = new Map();
  args.forEach((arg, i) => {
    if (arg === "--bind" || arg === "--ro-bind") {
      modes.set(args[i + 2] as string, arg === "--bind" ? "rw" : "ro");
    }
  });
  return modes;
}

/** The process tier's binds in command-line order (bwrap mounts in that order). */
function processTargets(fileView: FileView): string[] {
  const args = bwrapArgs({
    sources: {
      workspace: "/w",
      skills: "/s",
      runtime: "/r",
      tmp: "/t",
      home: "/h",
      ...(fileView === "workdir" ? { workdir: "/d" } : {}),
    },
    execShim: "/x",
    ...(fileView === "workdir" ? { workdirTarget: WORKDIR_TARGET } : {}),
  });
  return args.flatMap((arg, i) =>
    arg === "--bind" || arg === "--ro-bind" ? [args[i + 2] as string] : [],
  );
}

function without(modes: Modes, target: string): Modes {
  const left = new Map(modes);
  left.delete(target);
  return left;
}

describe("one mount table, two tiers", () => {
  for (const view of FILE_VIEW_VALUES) {
    test(`the ${view} view: both tiers mount the same targets with the same modes`, () => {
      const container = containerModes(view);
      const process = processModes(view);
      // One tier's own rows, named: everything else must agree target for target.
      expect(container.get(CONTAINER_EGRESS_MOUNT)).toBe("ro");
      expect(process.get(EXEC_SHIM_MOUNT)).toBe("ro");
      expect(without(container, CONTAINER_EGRESS_MOUNT)).toEqual(without(process, EXEC_SHIM_MOUNT));
    });
  }

  test("the workspace view: the whole UserWorkspace read-write, no Workdir mount", () => {
    for (const modes of [containerModes("workspace"), processModes("workspace")]) {
      expect(modes.get(SANDBOX_USER_DATA_MOUNT)).toBe("rw");
      expect(modes.has(WORKDIR_TARGET)).toBe(false);
      expect(modes.get(SANDBOX_SKILLS_MOUNT)).toBe("ro");
      expect(modes.get(SANDBOX_RUNTIME_MOUNT)).toBe("ro");
    }
  });

  test("the workdir view: the UserWorkspace read-only, the Workdir read-write on top", () => {
    for (const modes of [containerModes("workdir"), processModes("workdir")]) {
      expect(modes.get(SANDBOX_USER_DATA_MOUNT)).toBe("ro");
      expect(modes.get(WORKDIR_TARGET)).toBe("rw");
    }
    // bwrap mounts in order: a mount inside another must come after it.
    const order = processTargets("workdir");
    const at = (target: string) => order.indexOf(target);
    expect(at(SANDBOX_HOME)).toBeLessThan(at(SANDBOX_USER_DATA_MOUNT));
    expect(at(SANDBOX_HOME)).toBeLessThan(at(SANDBOX_SKILLS_MOUNT));
    expect(at(SANDBOX_USER_DATA_MOUNT)).toBeLessThan(at(WORKDIR_TARGET));
  });

  test("each tier's list is exactly the table's rows for that tier and view", () => {
    for (const view of FILE_VIEW_VALUES) {
      const rows = (tier: "container" | "process") =>
        sandboxMounts(tier, view, WORKDIR_TARGET).map((m) => m.target);
      expect([...containerModes(view).keys()].sort()).toEqual(rows("container").sort());
      expect([...processModes(view).keys()].sort()).toEqual(rows("process").sort());
    }
  });

  test("every key has one row, and every row a tier and a view", () => {
    const keys = MOUNT_TABLE.map((row) => row.key);
    expect(new Set(keys).size).toBe(keys.length);
    for (const row of MOUNT_TABLE) {
      expect(Object.keys(row.tiers).length).toBeGreaterThan(0);
      expect(row.views.length).toBeGreaterThan(0);
    }
  });
});
