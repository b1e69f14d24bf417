import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type WorkspaceFs,
} from "../../agent-host/workspace/index.ts";

const BENCH_UID = "bench";
const BENCH_WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";

/**
 * One managed Workdir in a fresh temp data root, opened through both resolvers, and its
 * absolute host path for the plain-fs baselines. The caller removes `root`.
 */
export async function benchWorkdirs(): Promise<{
  root: string;
  absoluteWorkdir: string;
  fsOpenat2: WorkspaceFs;
  fsWalk: WorkspaceFs;
}> {
  const root = mkdtempSync(join(tmpdir(), "workcell-bench-"));
  const sys = createLibcSyscalls();
  const open = (kind: "openat2" | "walk") =>
    createUserWorkspaces({
      dataRoot: root,
      sys,
      resolver: createPathResolver(sys, { kind }),
    }).ensureManagedWorkdir(BENCH_UID, BENCH_WORKDIR);
  return {
    root,
    absoluteWorkdir: join(root, "users", BENCH_UID, "workspace", BENCH_WORKDIR),
    fsOpenat2: await open("openat2"),
    fsWalk: await open("walk"),
  };
}
