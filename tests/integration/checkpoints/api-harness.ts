import type { OpenAPIHono } from "@hono/zod-openapi";
import { CHECKPOINTS_DIR } from "../../../agent-host/checkpoints/checkpoint-store.ts";
import {
  type StartCheckpointsDeps,
  startCheckpoints,
} from "../../../agent-host/checkpoints/start-checkpoints.ts";
import {
  detectSubvolumes,
  type SubvolumeSyscalls,
  subvolumeWorkdirs,
} from "../../../agent-host/checkpoints/subvolumes.ts";
import { createDataPlaneApp, startDataPlaneServer } from "../../../agent-host/data-plane/index.ts";
import { createAccountingQuota } from "../../../agent-host/quota/workspace-quota.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import type { AppEnv } from "../../../functions/app-env.ts";
import type { CapabilityMinter } from "../../../functions/capability/capability-minter.ts";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createPollingRunEventWaiter } from "../../../functions/run-events/run-event-waiter.ts";
import { importCapabilityPublicKey } from "../../../shared/capability/capability-keys.ts";
import { createDb, type PostgresDb } from "../../../shared/db/client.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { freshBucket, freshQueue, s3Client, sqsClient } from "../../support/aws.ts";
import type { DataRoot } from "../../support/data-root.ts";
import {
  ALICE,
  type CallOptions,
  createTestFunctionsApp,
  testLogger,
} from "../../support/functions-app.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { newKeyPair } from "../../unit/capability/capability-keys.ts";

export { ALICE, BOB } from "../../support/functions-app.ts";
export type ThreadJson = { thread_id: string; workdir_path: string; project_id: string };

export type CheckpointsHarness = {
  app: OpenAPIHono<AppEnv>;
  db: PostgresDb;
  databaseUrl: string;
  dataRoot: string;
  dataPlaneUrl: string;
  capabilities: CapabilityMinter;
  call(method: string, path: string, options?: CallOptions): Promise<Response>;
  /** A dev token of `uid` (what a CLI login stores). */
  token(uid: string): Promise<string>;
  createThread(uid?: string): Promise<ThreadJson>;
  /** The Workdir on disk (made by the data plane's materialize, here by the test). */
  workdirOnDisk(workdirPath: string, uid?: string): string;
  /** Creates the managed Workdir as the node does (a subvolume on btrfs); its path. */
  ensureWorkdir(workdirPath: string, uid?: string): Promise<string>;
  /** The data root's btrfs subvolumes, when it has them. */
  readonly subvolumes?: SubvolumeSyscalls;
  close(): Promise<void>;
};

export interface HarnessOptions {
  /** Bounds of a manual checkpoint's Execution Lease. */
  readonly lease?: StartCheckpointsDeps["lease"];
  /**
   * Awaited inside a take when it reads the uid's usage, which it does while it holds the
   * Workdir's Execution Lease: a test holds a checkpoint there to look at what waits.
   */
  readonly beforeQuotaRead?: (uid: string) => Promise<void>;
}

/**
 * The functions app (checkpoint routes as app.ts registers them) on a fresh database and
 * the real data plane with the node's checkpoints (startCheckpoints, as the agent-host
 * wires it) over `root`: the default data root (copy), an XFS loop one (reflink) or a
 * btrfs loop one (snapshots of subvolume Workdirs).
 */
export async function startCheckpointsHarness(
  root: DataRoot,
  options: HarnessOptions = {},
): Promise<CheckpointsHarness> {
  const database: TestDatabase = await freshDatabase();
  const db = createDb(database.sql);
  const s3 = s3Client();
  const bucket = await freshBucket(s3, "ckp");
  const sqs = sqsClient();
  const queueUrl = await freshQueue(sqs, "runs");
  const keys = await newKeyPair();
  const sys = createLibcSyscalls();
  const resolver = createPathResolver(sys);
  const quota = createAccountingQuota({ dataRoot: root.path, maxUsageAgeMs: 0 });
  // As startWorkspaces: on btrfs, managed Workdirs are subvolumes and checkpoints snapshots.
  const subvolumes = detectSubvolumes({ dataRoot: root.path, sys }, CHECKPOINTS_DIR);
  const userWorkspaces = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver,
    ...subvolumeWorkdirs("auto", subvolumes),
  });
  const started = startCheckpoints({
    db,
    nodeId: "node-test",
    dataRoot: root.path,
    sys,
    resolver,
    workspaceBytes: async (uid, signal) => {
      await options.beforeQuotaRead?.(uid);
      return (await quota.usage(uid, signal)).bytes;
    },
    defaultWorkspaceBytes: 1024 ** 3,
    ...(subvolumes === undefined ? {} : { subvolumes }),
    ...(options.lease === undefined ? {} : { lease: options.lease }),
    logger: testLogger(),
  });
  const server = await startDataPlaneServer({
    app: createDataPlaneApp({
      userWorkspaces,
      publicKeys: [await importCapabilityPublicKey(keys.publicJwk)],
      logger: testLogger(),
      quota,
      checkpoints: started.checkpoints,
    }),
    port: 0,
  });
  const capabilities = createCapabilityMinter({ privateJwk: keys.privateJwk });
  const { app, call, token } = createTestFunctionsApp({
    db,
    sqs,
    queueUrl,
    s3,
    bucket,
    dataPlaneUrl: server.url,
    capabilities,
    runEvents: createPollingRunEventWaiter(),
    logger: testLogger(),
  });
  return {
    app,
    db,
    databaseUrl: database.url,
    dataRoot: root.path,
    dataPlaneUrl: server.url,
    capabilities,
    call,
    token: (uid) => token(uid),
    async createThread(uid = ALICE) {
      const response = await call("POST", "/v1/threads", { uid, body: {} });
      if (response.status !== 201)
        throw new Error(`thread: ${response.status} ${await response.text()}`);
      return (await response.json()) as ThreadJson;
    },
    workdirOnDisk: (workdirPath, uid = ALICE) =>
      `${root.path}/users/${uidDirname(uid)}/workspace/${workdirPath}`,
    async ensureWorkdir(workdirPath, uid = ALICE) {
      (await userWorkspaces.ensureManagedWorkdir(uid, workdirPath)).close();
      return `${root.path}/users/${uidDirname(uid)}/workspace/${workdirPath}`;
    },
    ...(subvolumes === undefined ? {} : { subvolumes }),
    async close() {
      await started.stop();
      await server.close();
      await database.drop();
    },
  };
}
