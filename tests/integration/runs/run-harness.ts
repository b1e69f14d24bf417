import { randomUUID } from "node:crypto";
import { SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { and, asc, eq } from "drizzle-orm";
import { Registry } from "prom-client";
import { CHECKPOINTS_DIR } from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { detectSubvolumes, subvolumeWorkdirs } from "../../../agent-host/checkpoints/subvolumes.ts";
import {
  createEmptySkillProjection,
  createSqsWorkQueue,
  type ModelClientFactory,
  modelClientFactoryFor,
  RunWorker,
  type RunWorkerDeps,
  type RunWorkerLimits,
} from "../../../agent-host/runs/index.ts";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type UserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import type { RunQueue } from "../../../functions/queue/run-queue.ts";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { cancelRun } from "../../../functions/runs/cancel-run.ts";
import { submitRun } from "../../../functions/runs/submit-run.ts";
import { serializeQueueMessage } from "../../../shared/contracts/queue-message.ts";
import type { AgentOptions } from "../../../shared/contracts/run.ts";
import {
  type AgentRun,
  agentRuns,
  conversations,
  messages,
  projects,
  runEvents,
} from "../../../shared/db/schema.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { freshQueue, sqsClient } from "../../support/aws.ts";
import { pollFor, pollUntil } from "../../support/poll-until.ts";
import { type ManagerWorld, managerWorld } from "../sandbox/manager-fixture.ts";
import { containersOfNode, GEM, silentLogger } from "../sandbox/sandbox-fixture.ts";

/** Small enough that lease and cleanup tests finish in seconds, big enough for a busy CI. */
export const TEST_LIMITS: Partial<RunWorkerLimits> = {
  concurrency: 4,
  receiveWaitSeconds: 1,
  leaseTtlMs: 6_000,
  heartbeatIntervalMs: 500,
  stopGraceMs: 20_000,
  handBackDelaySeconds: 0,
  treeCleanupWaitMs: 5_000,
  treeCleanupPollMs: 100,
};

export type RunWorld = ManagerWorld & {
  sqs: SQSClient;
  queueUrl: string;
  dlqUrl: string;
  userWorkspaces: UserWorkspaces;
  /** The node's sandbox manager the in-process workers share. */
  sandboxManager: SandboxManager;
  /** A started worker of this node; stopped by cleanup(). */
  worker(options?: WorkerOptions): Promise<RunWorker>;
  project(options?: { linkedPath?: string; uid?: string }): Promise<Project>;
  /** A root thread of the project. */
  thread(project: Project): Promise<string>;
  /** The control plane's submission (submitRun), its message held back: no delivery yet. */
  commitRun(threadId: string, input: string, agent?: Record<string, unknown>): Promise<string>;
  dispatch(runId: string): Promise<void>;
  /**
   * The control plane's submission (submitRun), delivered to this world's queue;
   * `originRequestId` is the submitting request's X-Request-Id.
   */
  submit(
    threadId: string,
    input: string,
    agent?: Record<string, unknown>,
    originRequestId?: string,
  ): Promise<string>;
  run(runId: string): Promise<AgentRun>;
  waitForRun(
    runId: string,
    until?: (run: AgentRun) => boolean,
    timeoutMs?: number,
  ): Promise<AgentRun>;
  events(runId: string): Promise<{ seq: number; type: string; data: unknown }[]>;
  waitForEvent(runId: string, type: string, timeoutMs?: number): Promise<void>;
  /** The control plane's cancel (cancelRun): flag + NOTIFY for a running run. */
  requestCancel(runId: string): Promise<void>;
  childRuns(parentRunId: string): Promise<AgentRun[]>;
  /** Tree cleanup runs after the ending is recorded: wait until the node has no sandbox left. */
  waitForNoContainers(timeoutMs?: number): Promise<void>;
  assistantMessages(threadId: string): Promise<string[]>;
};

export type Project = { id: string; uid: string; workdirPath: string };

export type WorkerOptions = {
  model?: ModelClientFactory;
  limits?: Partial<RunWorkerLimits>;
  listen?: boolean;
  extra?: Partial<RunWorkerDeps>;
};

export const UID = "runner";

const isTerminal = (run: AgentRun) => ["succeeded", "failed", "cancelled"].includes(run.status);

export async function runWorld(
  sandboxOverrides: Parameters<typeof managerWorld>[0] = {},
  tier: Parameters<typeof managerWorld>[1] = "container",
  worldOptions: Parameters<typeof managerWorld>[2] = {},
): Promise<RunWorld> {
  const base = await managerWorld(sandboxOverrides, tier, worldOptions);
  const sqs = sqsClient();
  const queueUrl = await freshQueue(sqs, "runs");
  const dlqUrl = await freshQueue(sqs, "runs-dlq");
  const sys = createLibcSyscalls();
  // As startWorkspaces: on a btrfs data root managed Workdirs are subvolumes.
  const subvolumes = detectSubvolumes({ dataRoot: base.dataRoot.path, sys }, CHECKPOINTS_DIR);
  const userWorkspaces = createUserWorkspaces({
    dataRoot: base.dataRoot.path,
    sys,
    resolver: createPathResolver(sys),
    owner: { uid: GEM, gid: GEM },
    ...subvolumeWorkdirs("auto", subvolumes),
  });
  const sandboxManager = base.manager();
  const workers: RunWorker[] = [];
  const { db } = base;
  const runQueue = createSqsRunQueue({ sqs, queueUrl });
  const held = createSqsRunQueue({ sqs, queueUrl: await freshQueue(sqs, "runs-held") });
  const submitThrough = async (
    queue: RunQueue,
    threadId: string,
    input: string,
    agent: Record<string, unknown> | undefined,
    originRequestId?: string,
  ): Promise<string> => {
    const [thread] = await db
      .select({ uid: conversations.uid })
      .from(conversations)
      .where(eq(conversations.threadId, threadId));
    if (!thread) throw new Error(`no thread ${threadId}`);
    const { run } = await submitRun(
      {
        db,
        runQueue: queue,
        logger: silentLogger,
        queueSendTimeoutMs: 10_000,
        metrics: createWorkcellMetrics(new Registry()),
      },
      {
        uid: thread.uid,
        target: { kind: "thread", threadId },
        input,
        agent: agent as AgentOptions | undefined,
        idempotencyKey: undefined,
        ...(originRequestId === undefined ? {} : { originRequestId }),
      },
    );
    return run.runId;
  };

  const world: RunWorld = {
    ...base,
    sqs,
    queueUrl,
    dlqUrl,
    userWorkspaces,
    sandboxManager,
    async worker(options = {}) {
      const worker = new RunWorker({
        db,
        dataRoot: base.dataRoot.path,
        queue: createSqsWorkQueue({ sqs, queueUrl, deadLetterQueueUrl: dlqUrl }),
        sandboxManager,
        userWorkspaces,
        skillProjection: createEmptySkillProjection({ dataRoot: base.dataRoot.path }),
        modelClientFactory: options.model ?? modelClientFactoryFor({ kind: "shell" }),
        nodeId: base.nodeId,
        logger: silentLogger,
        limits: { ...TEST_LIMITS, ...options.limits },
        ...(options.listen === false ? {} : { listen: postgresListen(base.database.sql) }),
        ...options.extra,
      });
      workers.push(worker);
      await worker.start();
      return worker;
    },
    async project(options = {}) {
      const uid = options.uid ?? UID;
      const linked = options.linkedPath !== undefined;
      const workdirPath = options.linkedPath ?? `projects/${randomUUID()}`;
      const [row] = await db
        .insert(projects)
        .values({
          uid,
          name: `p-${randomUUID().slice(0, 8)}`,
          workdirPath,
          directoryMode: linked ? "linked" : "managed",
        })
        .returning({ id: projects.id });
      if (!row) throw new Error("no project");
      return { id: row.id, uid, workdirPath };
    },
    async thread(project) {
      const threadId = randomUUID();
      await db.insert(conversations).values({
        threadId,
        uid: project.uid,
        projectId: project.id,
        rootThreadId: threadId,
      });
      return threadId;
    },
    async commitRun(threadId, input, agent) {
      // The control plane's own submission; its message goes to a queue no worker
      // reads, so the run is committed but not yet delivered (dispatch() delivers it).
      return submitThrough(held, threadId, input, agent);
    },
    async dispatch(runId) {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: serializeQueueMessage({ type: "run.dispatch", run_id: runId }),
        }),
      );
    },
    async submit(threadId, input, agent, originRequestId) {
      return submitThrough(runQueue, threadId, input, agent, originRequestId);
    },
    async run(runId) {
      const [row] = await db.select().from(agentRuns).where(eq(agentRuns.runId, runId));
      if (!row) throw new Error(`no run ${runId}`);
      return row;
    },
    waitForRun(runId, until = isTerminal, timeoutMs = 45_000) {
      return pollFor(() => world.run(runId), until, {
        what: `run ${runId}`,
        timeoutMs,
        intervalMs: 50,
        detail: (row) => `still ${row.status}`,
      });
    },
    async events(runId) {
      return db
        .select({ seq: runEvents.seq, type: runEvents.type, data: runEvents.data })
        .from(runEvents)
        .where(eq(runEvents.runId, runId))
        .orderBy(asc(runEvents.seq));
    },
    waitForEvent(runId, type, timeoutMs = 30_000) {
      return pollUntil(async () => (await world.events(runId)).some((e) => e.type === type), {
        what: `a ${type} event of run ${runId}`,
        timeoutMs,
        intervalMs: 50,
      });
    },
    async requestCancel(runId) {
      // The control plane's cancel (POST /v1/runs/{id}/cancel): flag + NOTIFY for a
      // running run, in one transaction.
      await cancelRun(db, (await world.run(runId)).uid, runId);
    },
    async childRuns(parentRunId) {
      return db
        .select()
        .from(agentRuns)
        .where(eq(agentRuns.parentRunId, parentRunId))
        .orderBy(asc(agentRuns.createdAt));
    },
    async waitForNoContainers(timeoutMs = 30_000) {
      await pollFor(
        () => containersOfNode(base.docker, base.nodeId),
        (left) => left.length === 0,
        {
          what: "no sandbox container left",
          timeoutMs,
          intervalMs: 50,
          detail: (left) => `${left.length} left: ${left.map((c) => c.Names)}`,
        },
      );
    },
    async assistantMessages(threadId) {
      const rows = await db
        .select({ content: messages.content })
        .from(messages)
        .where(and(eq(messages.threadId, threadId), eq(messages.role, "assistant")))
        .orderBy(asc(messages.createdAt));
      return rows.map((r) => r.content);
    },
    async cleanup() {
      await Promise.all(workers.map((w) => w.stop()));
      sqs.destroy();
      await base.cleanup();
    },
  };
  return world;
}

/** Events of a run are 1..n without gaps and end with exactly one run.completed. */
export function expectGapFree(events: { seq: number; type: string }[]): void {
  const seqs = events.map((e) => e.seq);
  const expected = events.map((_, i) => i + 1);
  if (JSON.stringify(seqs) !== JSON.stringify(expected)) {
    throw new Error(`seq not gap-free: ${JSON.stringify(seqs)}`);
  }
  const completed = events.filter((e) => e.type === "run.completed");
  if (completed.length !== 1 || events.at(-1)?.type !== "run.completed") {
    throw new Error(`run.completed is not the single last event: ${events.map((e) => e.type)}`);
  }
}
