import type { S3Client } from "@aws-sdk/client-s3";
import type { Logger } from "pino";
import type { Db } from "../shared/db/client.ts";
import { DEFAULT_USER_LIMITS } from "../shared/limits/user-limits.ts";
import type { WorkcellMetrics } from "../shared/metrics/workcell-metrics.ts";
import { CHECKPOINTS_DIR } from "./checkpoints/checkpoint-store.ts";
import { startCheckpoints } from "./checkpoints/start-checkpoints.ts";
import {
  detectSubvolumes,
  subvolumeWorkdirs,
  type WorkdirSubvolumes,
} from "./checkpoints/subvolumes.ts";
import { createAccountingQuota } from "./quota/workspace-quota.ts";
import { createAgentHostSkills } from "./skills/agent-host-skills.ts";
import { createLibcSyscalls } from "./workspace/libc-syscalls.ts";
import { createPathResolver } from "./workspace/path-resolver.ts";
import { createUserWorkspaces } from "./workspace/user-workspaces.ts";

/** The sandbox user (agent-host/sandbox/container/container-spec.ts): it must own what it writes. */
export const SANDBOX_OWNER = { uid: 1000, gid: 1000 } as const;

/**
 * The node's POSIX side over the data root: the user workspaces, their quota accounting,
 * checkpoints and skills (built-ins registered). `stops` gets what must be stopped.
 */
export async function startWorkspaces(
  deps: {
    readonly db: Db;
    readonly dataRoot: string;
    readonly workdirSubvolumes?: WorkdirSubvolumes;
    readonly nodeId: string;
    readonly s3: S3Client;
    readonly attachmentsBucket: string;
  },
  logger: Logger,
  metrics: WorkcellMetrics,
  stops: Array<() => Promise<void>>,
  signal: AbortSignal,
) {
  const sys = createLibcSyscalls();
  // Only root can give files to the sandbox user; a non-root host keeps them its own
  // (and then the sandbox user cannot write them: run agent-hosts as root).
  const owner = process.getuid?.() === 0 ? { owner: SANDBOX_OWNER } : {};
  // On a btrfs data root each managed Workdir is a subvolume, checkpointed as a snapshot.
  const subvolumes = detectSubvolumes({ dataRoot: deps.dataRoot, sys }, CHECKPOINTS_DIR);
  const userWorkspaces = createUserWorkspaces({
    dataRoot: deps.dataRoot,
    sys,
    resolver: createPathResolver(sys),
    ...owner,
    ...subvolumeWorkdirs(deps.workdirSubvolumes ?? "auto", subvolumes),
  });
  // No filesystem quota on the data roots this runs on so far: the accounting mode
  // (docs/decisions/0017).
  const quota = createAccountingQuota({ dataRoot: deps.dataRoot });
  const checkpoints = startCheckpoints({
    db: deps.db,
    nodeId: deps.nodeId,
    dataRoot: deps.dataRoot,
    sys,
    resolver: createPathResolver(sys),
    ...owner,
    ...(subvolumes === undefined ? {} : { subvolumes }),
    workspaceBytes: async (uid, signal) => (await quota.usage(uid, signal)).bytes,
    defaultWorkspaceBytes: DEFAULT_USER_LIMITS.workspace_bytes,
    logger,
  });
  stops.push(() => checkpoints.stop());
  const skills = createAgentHostSkills({
    db: deps.db,
    sys,
    dataRoot: deps.dataRoot,
    logger,
    s3: deps.s3,
    uploadsBucket: deps.attachmentsBucket,
    workspaces: userWorkspaces,
    metrics,
  });
  await skills.registerBuiltins(signal);
  return { userWorkspaces, quota, checkpoints, skills };
}

export type NodeWorkspaces = Awaited<ReturnType<typeof startWorkspaces>>;
