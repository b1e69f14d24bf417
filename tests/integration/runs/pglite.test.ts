import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { PGlite } from "@electric-sql/pglite";
import { asc, eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import {
  createEmptySkillProjection,
  createSqsWorkQueue,
  RUN_CANCEL_CHANNEL,
  RunWorker,
} from "../../../agent-host/runs/index.ts";
import { LABEL } from "../../../agent-host/sandbox/container-labels.ts";
import { SandboxManager } from "../../../agent-host/sandbox/sandbox-manager.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { createPgliteDb } from "../../../infra/db/create-pglite-db.ts";
import { migrate } from "../../../infra/db/migrate.ts";
import { serializeQueueMessage } from "../../../shared/contracts/queue-message.ts";
import type { PgliteDb } from "../../../shared/db/client.ts";
import {
  agentRuns,
  conversations,
  messages,
  nodes,
  projects,
  requests,
  runEvents,
} from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { freshQueue, sqsClient } from "../../support/aws.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import {
  GEM,
  silentLogger,
  testConfig,
  testDriver,
  uniqueNodeId,
} from "../sandbox/sandbox-fixture.ts";
import { expectGapFree, TEST_LIMITS } from "./run-harness.ts";
import { scriptedModels, toolOutputs } from "./scripted-models.ts";

// The local Workcell runs everything on one embedded PGlite: a single connection, so a
// transaction that waits on another query deadlocks it. The worker must run there too.
let pglite: PGlite;
let db: PgliteDb;
let dataRoot: DataRoot;
let nodeId: string;
let worker: RunWorker;
const sqs = sqsClient();

beforeEach(async () => {
  pglite = await PGlite.create();
  await migrate(pglite);
  db = createPgliteDb(pglite);
  dataRoot = await freshDataRoot();
  nodeId = uniqueNodeId();
  await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
});
afterEach(async () => {
  await worker?.stop();
  await removeContainersLabelled(requireDocker().docker, LABEL.nodeId, nodeId);
  await pglite.close();
  await dataRoot.remove();
});

it("runs, sub-agents, cancels and tree cleanup work on PGlite", async () => {
  const { docker, image } = requireDocker();
  const config = testConfig(image, { drainTimeoutMs: 1_000, killGraceMs: 1_000 });
  const sys = createLibcSyscalls();
  const queueUrl = await freshQueue(sqs, "pglite-runs");
  const models = scriptedModels((request) => {
    if (request.depth === 1) {
      return [
        { toolCalls: [{ name: "bash", arguments: { command: "echo child > outputs/c.txt" } }] },
        { text: "child done" },
      ];
    }
    if (request.input === "spawn") {
      return [
        { toolCalls: [{ name: "spawn_subagent", arguments: { task: "write it" } }] },
        { text: "root done" },
      ];
    }
    return [{ toolCalls: [{ name: "bash", arguments: { command: "sleep 3135" } }] }];
  });
  const manager = new SandboxManager({
    db,
    driver: testDriver(docker, dataRoot.path, config),
    logger: silentLogger,
    nodeId,
    config,
  });
  worker = new RunWorker({
    db,
    dataRoot: dataRoot.path,
    queue: createSqsWorkQueue({ sqs, queueUrl }),
    sandboxManager: manager,
    userWorkspaces: createUserWorkspaces({
      dataRoot: dataRoot.path,
      sys,
      resolver: createPathResolver(sys),
      owner: { uid: GEM, gid: GEM },
    }),
    skillProjection: createEmptySkillProjection({ dataRoot: dataRoot.path }),
    modelClientFactory: models.factory,
    nodeId,
    logger: silentLogger,
    limits: TEST_LIMITS,
    listen: async (channel, onPayload) => pglite.listen(channel, onPayload),
  });
  await worker.start();

  const uid = "local-user";
  const workdirPath = `projects/${randomUUID()}`;
  const [project] = await db
    .insert(projects)
    .values({ uid, name: "local", workdirPath, directoryMode: "managed" })
    .returning({ id: projects.id });
  const submit = async (input: string) => {
    const threadId = randomUUID();
    await db.insert(conversations).values({
      threadId,
      uid,
      projectId: project?.id ?? "",
      rootThreadId: threadId,
    });
    const runId = await db.transaction(async (tx) => {
      const [m] = await tx
        .insert(messages)
        .values({ uid, threadId, role: "user", content: input })
        .returning({ id: messages.id });
      const [r] = await tx
        .insert(requests)
        .values({ uid, threadId, messageId: m?.id ?? "", requestHash: "h" })
        .returning({ id: requests.id });
      const [run] = await tx
        .insert(agentRuns)
        .values({ uid, threadId, requestId: r?.id ?? "", runtimeScopeId: threadId, input })
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
  const events = (runId: string) =>
    db
      .select({ seq: runEvents.seq, type: runEvents.type, data: runEvents.data })
      .from(runEvents)
      .where(eq(runEvents.runId, runId))
      .orderBy(asc(runEvents.seq));
  const waitFor = async (runId: string, check: (status: string, types: string[]) => boolean) => {
    const deadline = performance.now() + 30_000;
    for (;;) {
      const [run] = await db.select().from(agentRuns).where(eq(agentRuns.runId, runId));
      const types = (await events(runId)).map((e) => e.type);
      if (run && check(run.status, types)) return run;
      if (performance.now() > deadline) throw new Error(`run ${runId}: ${run?.status} ${types}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const noContainers = async () => {
    const deadline = performance.now() + 30_000;
    while (
      (
        await docker.listContainers({
          all: true,
          filters: { label: [`${LABEL.nodeId}=${nodeId}`] },
        })
      ).length > 0
    ) {
      if (performance.now() > deadline) throw new Error("sandbox left behind");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const spawned = await submit("spawn");
  expect((await waitFor(spawned, (s) => s !== "pending" && s !== "running")).status).toBe(
    "succeeded",
  );
  expect(toolOutputs(await events(spawned))).toEqual(["child done"]);
  expectGapFree(await events(spawned));
  const file = join(
    dataRoot.path,
    "users",
    uidDirname(uid),
    "workspace",
    workdirPath,
    "outputs",
    "c.txt",
  );
  expect(readFileSync(file, "utf8")).toBe("child\n");
  await noContainers();

  const sleeper = await submit("sleep");
  await waitFor(sleeper, (_s, types) => types.includes("tool.started"));
  await db.transaction(async (tx) => {
    await tx.update(agentRuns).set({ cancelRequested: true }).where(eq(agentRuns.runId, sleeper));
    await tx.execute(sql`select pg_notify(${RUN_CANCEL_CHANNEL}::text, ${sleeper}::text)`);
  });
  expect((await waitFor(sleeper, (s) => s !== "running")).status).toBe("cancelled");
  expectGapFree(await events(sleeper));
  await noContainers();
});
