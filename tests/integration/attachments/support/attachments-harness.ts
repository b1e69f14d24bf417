import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { type Dirent, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { createInterface } from "node:readline";
import type { S3Client } from "@aws-sdk/client-s3";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AttachmentImportLimits } from "../../../../agent-host/attachments/attachment-import-limits.ts";
import { createS3AttachmentObjectStore } from "../../../../agent-host/attachments/s3-attachment-object-store.ts";
import {
  createDataPlaneApp,
  startDataPlaneServer,
} from "../../../../agent-host/data-plane/index.ts";
import { createAccountingQuota } from "../../../../agent-host/quota/workspace-quota.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../../agent-host/workspace/index.ts";
import type { AppEnv } from "../../../../functions/app-env.ts";
import type { AttachmentLimits } from "../../../../functions/attachments/attachment-limits.ts";
import type { CapabilityMinter } from "../../../../functions/capability/capability-minter.ts";
import { createCapabilityMinter } from "../../../../functions/capability/create-capability-minter.ts";
import { createPollingRunEventWaiter } from "../../../../functions/run-events/run-event-waiter.ts";
import { importCapabilityPublicKey } from "../../../../shared/capability/capability-keys.ts";
import type { UploadsResponse } from "../../../../shared/contracts/attachment.ts";
import { createDb, type PostgresDb } from "../../../../shared/db/client.ts";
import { uidDirname } from "../../../../shared/paths/uid-dirname.ts";
import { awsConfig, freshBucket, freshQueue, s3Client, sqsClient } from "../../../support/aws.ts";
import { freshDataRoot } from "../../../support/data-root.ts";
import {
  ALICE,
  type CallOptions,
  createTestFunctionsApp,
  testLogger,
} from "../../../support/functions-app.ts";
import { freshDatabase, type TestDatabase } from "../../../support/postgres.ts";
import { newKeyPair } from "../../../unit/capability/capability-keys.ts";

export { ALICE, BOB, type CallOptions } from "../../../support/functions-app.ts";

export type HarnessOptions = {
  /** `child`: the data plane runs in its own process (memory measurements). */
  dataPlane?: "in-process" | "child";
  importLimits?: Partial<AttachmentImportLimits>;
  limits?: Partial<AttachmentLimits>;
  /** The in-process data plane enforces UserWorkspace quotas (measured afresh per write). */
  quota?: boolean;
};

export type ThreadJson = { thread_id: string; workdir_path: string };
export type UploadItem = UploadsResponse["items"][number];

export type AttachmentsHarness = {
  app: OpenAPIHono<AppEnv>;
  database: TestDatabase;
  db: PostgresDb;
  s3: S3Client;
  bucket: string;
  dataRoot: string;
  dataPlaneUrl: string;
  /** The minter functions/ uses (to call the data plane directly, as an attacker would). */
  capabilities: CapabilityMinter;
  /** The data plane's process when it runs in a child. */
  dataPlaneChild: ChildProcessWithoutNullStreams | undefined;
  call(method: string, path: string, options?: CallOptions): Promise<Response>;
  /** A token carrying the admin claim, for `/v1/admin/*`. */
  adminToken(uid: string): Promise<string>;
  createThread(uid?: string): Promise<ThreadJson>;
  requestUploads(
    files: { name: string; size: number; content_type: string }[],
    uid?: string,
  ): Promise<UploadsResponse>;
  /** The browser's PUT: plain fetch to the presigned URL with the headers it names. */
  put(item: UploadItem, bytes: Uint8Array | string): Promise<void>;
  confirm(threadId: string, body: unknown, uid?: string): Promise<Response>;
  /** Reads a Workdir file back through the data plane with a `read` capability. */
  readBack(threadId: string, path: string, uid?: string): Promise<Buffer>;
  /** The Workdir on disk. */
  workdirOnDisk(thread: ThreadJson, uid?: string): string;
  /** Every regular file below the Workdir's uploads/, relative to uploads/ ([] if none). */
  uploadsOnDisk(thread: ThreadJson, uid?: string): string[];
  close(): Promise<void>;
};

/**
 * The functions app with the attachment routes registered the way app.ts will, on a
 * fresh database, a fresh bucket and the real data plane (with the attachments bucket)
 * over a fresh data root.
 */
export async function startAttachmentsHarness(
  options: HarnessOptions = {},
): Promise<AttachmentsHarness> {
  const database = await freshDatabase();
  const db = createDb(database.sql);
  const s3 = s3Client();
  const bucket = await freshBucket(s3, "att");
  const sqs = sqsClient();
  const queueUrl = await freshQueue(sqs, "runs");
  const keys = await newKeyPair();
  const root = await freshDataRoot();
  const dataPlane =
    options.dataPlane === "child"
      ? await startChildDataPlane(root.path, keys.publicJwk, bucket)
      : await startInProcessDataPlane(
          root.path,
          keys.publicJwk,
          s3,
          bucket,
          options.importLimits,
          options.quota === true,
        );

  const capabilities = createCapabilityMinter({ privateJwk: keys.privateJwk });
  const { app, call, adminToken } = createTestFunctionsApp({
    db,
    sqs,
    queueUrl,
    s3,
    bucket,
    dataPlaneUrl: dataPlane.url,
    capabilities,
    runEvents: createPollingRunEventWaiter(),
    logger: testLogger(),
    ...(options.limits === undefined ? {} : { attachmentLimits: options.limits }),
  });
  const workdirOnDisk = (thread: ThreadJson, uid = ALICE) =>
    join(root.path, "users", uidDirname(uid), "workspace", thread.workdir_path);

  return {
    app,
    database,
    db,
    s3,
    bucket,
    dataRoot: root.path,
    dataPlaneUrl: dataPlane.url,
    capabilities,
    dataPlaneChild: dataPlane.child,
    call,
    adminToken,
    async createThread(uid = ALICE) {
      const response = await call("POST", "/v1/threads", { uid, body: {} });
      if (response.status !== 201)
        throw new Error(`thread: ${response.status} ${await response.text()}`);
      return (await response.json()) as ThreadJson;
    },
    async requestUploads(files, uid = ALICE) {
      const response = await call("POST", "/v1/attachments/uploads", { uid, body: { files } });
      if (response.status !== 201)
        throw new Error(`uploads: ${response.status} ${await response.text()}`);
      return (await response.json()) as UploadsResponse;
    },
    async put(item, bytes) {
      const response = await fetch(item.upload_url, {
        method: item.method,
        headers: item.headers,
        body: typeof bytes === "string" ? bytes : new Uint8Array(bytes),
      });
      if (!response.ok) throw new Error(`PUT ${response.status}: ${await response.text()}`);
      await response.body?.cancel();
    },
    confirm: (threadId, body, uid = ALICE) =>
      call("POST", `/v1/threads/${threadId}/attachments/confirm`, { uid, body }),
    async readBack(threadId, path, uid = ALICE) {
      const access = await call("POST", `/v1/threads/${threadId}/files/access`, {
        uid,
        body: { ops: ["read"] },
      });
      const { base_url, token: capability } = (await access.json()) as {
        base_url: string;
        token: string;
      };
      const response = await fetch(
        `${base_url}/dp/v1/files/content?${new URLSearchParams({ path: `/${path}` })}`,
        { headers: { authorization: `Bearer ${capability}` } },
      );
      if (response.status !== 200) throw new Error(`read ${path}: ${response.status}`);
      return Buffer.from(await response.arrayBuffer());
    },
    workdirOnDisk,
    uploadsOnDisk(thread, uid = ALICE) {
      return filesBelow(join(workdirOnDisk(thread, uid), "uploads"));
    },
    async close() {
      await dataPlane.close();
      await root.remove();
      await database.drop();
    },
  };
}

/** Regular files below `dir`, relative to it, sorted; [] when `dir` does not exist. */
export function filesBelow(dir: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { recursive: true, withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

type RunningDataPlane = {
  url: string;
  child: ChildProcessWithoutNullStreams | undefined;
  close(): Promise<void>;
};

async function startInProcessDataPlane(
  dataRoot: string,
  publicJwk: Parameters<typeof importCapabilityPublicKey>[0],
  s3: S3Client,
  bucket: string,
  limits: Partial<AttachmentImportLimits> | undefined,
  quota: boolean,
): Promise<RunningDataPlane> {
  const sys = createLibcSyscalls();
  const app = createDataPlaneApp({
    userWorkspaces: createUserWorkspaces({ dataRoot, sys, resolver: createPathResolver(sys) }),
    publicKeys: [await importCapabilityPublicKey(publicJwk)],
    logger: testLogger(),
    ...(quota ? { quota: createAccountingQuota({ dataRoot, maxUsageAgeMs: 0 }) } : {}),
    attachments: {
      objects: createS3AttachmentObjectStore({ s3, bucket }),
      ...(limits === undefined ? {} : { limits }),
    },
  });
  const server = await startDataPlaneServer({ app, port: 0 });
  return { url: server.url, child: undefined, close: () => server.close() };
}

async function startChildDataPlane(
  dataRoot: string,
  publicJwk: object,
  bucket: string,
): Promise<RunningDataPlane> {
  const child = spawn(process.execPath, [join(import.meta.dirname, "data-plane-child.ts")], {
    env: {
      ...process.env,
      DATA_ROOT: dataRoot,
      CAPABILITY_PUBLIC_KEY: JSON.stringify(publicJwk),
      AWS_ENDPOINT_URL: awsConfig().endpoint,
      ATTACHMENTS_BUCKET: bucket,
    },
  });
  const stderr: string[] = [];
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    lines.once("line", (line) => resolve((JSON.parse(line) as { url: string }).url));
    child.once("exit", (code) =>
      reject(new Error(`data plane exited (${code}): ${stderr.join("")}`)),
    );
  });
  return {
    url,
    child,
    close: async () => {
      child.stdin.end();
      if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}
