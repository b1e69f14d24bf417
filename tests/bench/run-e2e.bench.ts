// A run end to end through the run worker, against the real parts in one process: a
// throw-away Postgres, fauxqs (SQS), dockerd. "Submit" is what the control plane does
// (commit message + request + run, then send the dispatch); times are taken to the first
// event and to the terminal event of a run whose command is `true` (shell model):
//  - cold: a new thread each time, so a new sandbox (and its removal at the end);
//  - warm: a thread whose sandbox is kept up by another run of the same thread;
//  - baseline: the raw sandbox exec of `true` through the manager, measured in this run.
// Not the HTTP path of the local stack: the API's own overhead is a separate benchmark.
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateQueueCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import Docker from "dockerode";
import { sql as dsql } from "drizzle-orm";
import { startFauxqs } from "fauxqs";
import { pino } from "pino";
import postgres from "postgres";
import {
  createEmptySkillProjection,
  modelClientFactoryFor,
  postgresListen,
  RUN_CANCEL_CHANNEL,
  RUN_EVENTS_CHANNEL,
  RunWorker,
} from "../../agent-host/runs/index.ts";
import { LABEL } from "../../agent-host/sandbox/container-labels.ts";
import { DockerDriver } from "../../agent-host/sandbox/docker-driver.ts";
import { sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import { SandboxManager } from "../../agent-host/sandbox/sandbox-manager.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../agent-host/workspace/index.ts";
import { serializeQueueMessage } from "../../shared/contracts/queue-message.ts";
import { createDb } from "../../shared/db/client.ts";
import {
  agentRuns,
  conversations,
  messages,
  nodes,
  projects,
  requests,
} from "../../shared/db/schema.ts";
import { startPostgresCluster } from "../setup/postgres-cluster.ts";
import { prepareTemplateDatabase, templateDatabaseName } from "../setup/template-database.ts";
import { measure, report, type Sample } from "./measure.ts";

const COLD_RUNS = 15;
const WARM_RUNS = 40;
const EXEC_RUNS = 100;
const UID = "bench";
const RUN_TIMEOUT_MS = 60_000;

const image = (
  JSON.parse(
    await readFile(new URL("../../infra/sandbox-image/test-image.json", import.meta.url), "utf8"),
  ) as { name: string }
).name;
const docker = new Docker();
const nodeId = `bench-${randomUUID().slice(0, 8)}`;
const logger = pino({ level: "silent" });
const cluster = await startPostgresCluster();
const fauxqs = await startFauxqs({ port: 0, logger: false });
const dataRoot = await mkdtemp(join(tmpdir(), "workcell-bench-"));
let sql: postgres.Sql | undefined;
let worker: RunWorker | undefined;

try {
  await prepareTemplateDatabase(cluster.adminUrl);
  const url = new URL(cluster.adminUrl);
  url.pathname = `/${templateDatabaseName}`;
  sql = postgres(url.toString(), { max: 20, onnotice: () => {} });
  const db = createDb(sql);
  await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });

  const sqs = new SQSClient({
    endpoint: fauxqs.address,
    region: "us-east-1",
    credentials: { accessKeyId: "bench", secretAccessKey: "bench" },
  });
  const created = await sqs.send(new CreateQueueCommand({ QueueName: `bench-${nodeId}` }));
  const queueUrl = created.QueueUrl ?? "";

  const config = sandboxConfigSchema.parse({ image });
  const manager = new SandboxManager({
    db,
    driver: new DockerDriver({ docker, logger, dataRoot, config }),
    logger,
    nodeId,
    config,
  });
  const sys = createLibcSyscalls();
  worker = new RunWorker({
    db,
    sqs,
    queueUrl,
    sandboxManager: manager,
    userWorkspaces: createUserWorkspaces({
      dataRoot,
      sys,
      resolver: createPathResolver(sys),
      owner: { uid: 1000, gid: 1000 },
    }),
    skillProjection: createEmptySkillProjection({ dataRoot }),
    modelClientFactory: modelClientFactoryFor({ kind: "shell" }),
    nodeId,
    logger,
    listen: postgresListen(sql),
  });
  await worker.start();

  // Event waits ride the same NOTIFY an SSE stream would, not polling.
  const waiting = new Map<string, () => void>();
  await sql.listen(RUN_EVENTS_CHANNEL, (runId) => waiting.get(runId)?.());
  const until = async (runId: string, done: (types: string[]) => boolean) => {
    const deadline = performance.now() + RUN_TIMEOUT_MS;
    for (;;) {
      const woken = new Promise<void>((resolve) => {
        waiting.set(runId, resolve);
        setTimeout(resolve, 200);
      });
      const rows = await db.execute<{ type: string }>(
        dsql`select type from run_events where run_id = ${runId} order by seq`,
      );
      if (done([...rows].map((r) => r.type))) return;
      if (performance.now() > deadline) throw new Error(`run ${runId} did not get there`);
      await woken;
    }
  };

  const [project] = await db
    .insert(projects)
    .values({
      uid: UID,
      name: "bench",
      workdirPath: `projects/${randomUUID()}`,
      directoryMode: "managed",
    })
    .returning({ id: projects.id });
  const newThread = async () => {
    const threadId = randomUUID();
    await db.insert(conversations).values({
      threadId,
      uid: UID,
      projectId: project?.id ?? "",
      rootThreadId: threadId,
    });
    return threadId;
  };
  const submit = async (threadId: string, input: string) => {
    const runId = await db.transaction(async (tx) => {
      const [m] = await tx
        .insert(messages)
        .values({ uid: UID, threadId, role: "user", content: input })
        .returning({ id: messages.id });
      const [r] = await tx
        .insert(requests)
        .values({ uid: UID, threadId, messageId: m?.id ?? "", requestHash: randomUUID() })
        .returning({ id: requests.id });
      const [run] = await tx
        .insert(agentRuns)
        .values({ uid: UID, threadId, requestId: r?.id ?? "", runtimeScopeId: threadId, input })
        .returning({ runId: agentRuns.runId });
      return run?.runId ?? "";
    });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: serializeQueueMessage({ type: "run.dispatch", run_id: runId }),
      }),
    );
    return runId;
  };
  const terminal = (types: string[]) => types.includes("run.completed");
  /** Submits `true` runs one after another; times to the first and the terminal event. */
  const series = async (label: string, thread: () => Promise<string>, runs: number) => {
    const first: number[] = [];
    const last: number[] = [];
    for (let i = -1; i < runs; i++) {
      const threadId = await thread();
      const started = performance.now();
      const runId = await submit(threadId, "true");
      await until(runId, (types) => types.length > 0);
      const firstAt = performance.now();
      await until(runId, terminal);
      // The first round warms up (JIT, connections) and is not counted.
      if (i >= 0) {
        first.push(firstAt - started);
        last.push(performance.now() - started);
      }
    }
    return [
      sample(`${label}: submit → first event`, first),
      sample(`${label}: submit → terminal`, last),
    ];
  };

  // Baseline: the raw exec of `true` in a live sandbox, through the manager.
  const baseScope = { uid: UID, runtimeScopeId: randomUUID(), workdirPath: "bench-exec" };
  await createUserWorkspaces({
    dataRoot,
    sys,
    resolver: createPathResolver(sys),
    owner: { uid: 1000, gid: 1000 },
  })
    .openUserWorkspace(UID, { create: true })
    .then(async (ws) => {
      await ws.ensureDir("bench-exec");
      ws.close();
    });
  const acquired = await manager.acquire(baseScope, AbortSignal.timeout(120_000));
  if (!acquired.ok) throw new Error(`acquire refused: ${acquired.reason}`);
  const handle = acquired.handle;
  const exec = await measure(
    "raw sandbox exec `true` (manager)",
    () => manager.exec(handle, { cmd: ["/bin/sh", "-c", "true"] }, AbortSignal.timeout(30_000)),
    { runs: EXEC_RUNS },
  );

  // Warm: a keeper run of the same thread holds the sandbox up between the timed runs.
  const warmThread = await newThread();
  const keeper = await submit(warmThread, "sleep 3600");
  await until(keeper, (types) => types.includes("tool.started"));
  const warm = await series("warm", async () => warmThread, WARM_RUNS);
  await sql`update agent_runs set cancel_requested = true where run_id = ${keeper}`;
  await sql`select pg_notify(${RUN_CANCEL_CHANNEL}, ${keeper})`;
  await until(keeper, terminal);
  const cold = await series("cold", newThread, COLD_RUNS);

  report("run end to end (`true`, shell model) vs raw sandbox exec", exec, [...warm, ...cold]);
} finally {
  await worker?.stop();
  await docker
    .listContainers({ all: true, filters: { label: [`${LABEL.nodeId}=${nodeId}`] } })
    .then((found) =>
      Promise.all(found.map((c) => docker.getContainer(c.Id).remove({ force: true }))),
    );
  await sql?.end();
  await fauxqs.stop();
  await cluster.stop();
  await rm(dataRoot, { recursive: true, force: true });
}

function sample(name: string, times: number[]): Sample {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { name, medianMs: at(0.5), p99Ms: at(0.99), runs: sorted.length };
}
