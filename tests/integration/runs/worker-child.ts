// A stand-in agent-host process running a RunWorker on the shared database, queue and
// Docker, with the shell model. Reports on stdout as JSON lines; "stop" on stdin stops
// it cleanly. Run as `node worker-child.ts '<json args>'`.
import { SQSClient } from "@aws-sdk/client-sqs";
import Docker from "dockerode";
import postgres from "postgres";
import {
  createEmptySkillProjection,
  createSqsWorkQueue,
  modelClientFactoryFor,
  RunWorker,
  type RunWorkerLimits,
} from "../../../agent-host/runs/index.ts";
import { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { createDb } from "../../../shared/db/client.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";
import { GEM, silentLogger, testConfig, testDriver } from "../sandbox/sandbox-fixture.ts";

export type WorkerChildArgs = {
  dbUrl: string;
  dataRoot: string;
  nodeId: string;
  image: string;
  queueUrl: string;
  awsEndpoint: string;
  limits: Partial<RunWorkerLimits>;
  /** Keep a tree's sandbox warm this long after it ends (default 0: destroyed at once). */
  keepWarmMs?: number;
};

const args = JSON.parse(process.argv[2] ?? "{}") as WorkerChildArgs;
const say = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`);

const sql = postgres(args.dbUrl, { max: 20, onnotice: () => {} });
const db = createDb(sql);
const config = testConfig(args.image, {
  drainTimeoutMs: 1_000,
  killGraceMs: 1_000,
  ...(args.keepWarmMs === undefined ? {} : { keepWarmMs: args.keepWarmMs }),
});
const sandboxManager = new SandboxManager({
  db,
  driver: testDriver(new Docker(), args.dataRoot, config),
  logger: silentLogger,
  nodeId: args.nodeId,
  config,
});
const sys = createLibcSyscalls();
const sqs = new SQSClient({
  endpoint: args.awsEndpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
});
const worker = new RunWorker({
  db,
  dataRoot: args.dataRoot,
  queue: createSqsWorkQueue({ sqs, queueUrl: args.queueUrl }),
  sandboxManager,
  userWorkspaces: createUserWorkspaces({
    dataRoot: args.dataRoot,
    sys,
    resolver: createPathResolver(sys),
    owner: { uid: GEM, gid: GEM },
  }),
  skillProjection: createEmptySkillProjection({ dataRoot: args.dataRoot }),
  modelClientFactory: modelClientFactoryFor({ kind: "shell" }),
  nodeId: args.nodeId,
  logger: silentLogger,
  limits: args.limits,
  listen: postgresListen(sql),
});
await worker.start();
say({ event: "ready", pid: process.pid });

process.stdin.on("data", async (chunk) => {
  if (!chunk.toString().includes("stop")) return;
  await worker.stop();
  await sandboxManager.stop();
  sqs.destroy();
  await sql.end({ timeout: 5 });
  say({ event: "stopped" });
  process.exit(0);
});
