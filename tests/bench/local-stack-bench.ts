// Helpers of run-e2e.bench.ts and run-scaling.bench.ts: the local Workcell started in this process and served on
// a loopback port, a client of its HTTP API (threads, runs, SSE events, cancel) that
// times what a user would see, and a count of the sandbox containers Docker creates.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import type Docker from "dockerode";
import { pino } from "pino";
import { resolveSandboxImage } from "../../agent-host/runtime/sandbox-image.ts";
import { LABEL } from "../../agent-host/sandbox/instance/container-labels.ts";
import { mintDevToken } from "../../infra/local/dev-token.ts";
import { type LocalStack, localNodeId, startLocalStack } from "../../infra/local/local-stack.ts";
import { localEnvSchema } from "../../shared/env/local-env.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";
import { freePort } from "../setup/free-port.ts";

/** How long one API call may take before the benchmark gives up. */
export const REQUEST_TIMEOUT_MS = 60_000;
/** An event stream stays open as long as its run (the warm keeper: the whole series). */
export const EVENT_STREAM_TIMEOUT_MS = 10 * 60_000;

export type BenchStack = {
  url: string;
  /** The node id the stack labels its sandboxes with. */
  nodeId: string;
  /** The sandbox image the stack runs. */
  image: string;
  api: Api;
  /** The dev token of `uid` behind `api`, for calls it does not wrap (approvals bench). */
  token: string;
  /** A dev token with the admin claim (approvals bench: limits, node counts). */
  adminToken: string;
  /** The stack's DATA_DIR (approvals bench: a Workdir's files as the node holds them). */
  dataDir: string;
  /** A client with a dev token of another user (the scaling benchmark's many tenants). */
  apiFor(uid: string): Promise<Api>;
  stop(): Promise<void>;
};

export type BenchStackOptions = {
  /** One tracing for both planes (default off). */
  tracing?: Tracing;
  /** Where DATA_DIR is made (default the temp dir): an XFS loop mount for reflink runs. */
  dataParent?: string;
  /** The run worker's slots (default DEFAULT_WORKER_CONCURRENCY): run-throughput's sweep. */
  workerConcurrency?: number;
};

/**
 * The local stack as `npm start` wires it, on free ports, over a fresh DATA_DIR. stop()
 * closes the server, stops the stack, removes the node's sandbox containers (a stopping
 * agent-host leaves them to the reconciler of its next start) and the DATA_DIR.
 */
export async function startBenchStack(
  docker: Docker,
  uid: string,
  options: BenchStackOptions = {},
): Promise<BenchStack> {
  const { tracing, workerConcurrency } = options;
  const dataDir = await mkdtemp(join(options.dataParent ?? tmpdir(), "workcell-bench-e2e-"));
  const port = await freePort();
  // Only these variables: a MODEL_BASE_URL in the caller's environment must not swap the
  // `shell` model (which executes the input) for a real one.
  const env = parseEnv(localEnvSchema, {
    PORT: String(port),
    DATA_DIR: dataDir,
    AWS_EMULATOR_PORT: String(await freePort()),
    DATA_PLANE_PORT: String(await freePort()),
    // BENCH_LOG_LEVEL=warn shows why a benchmark run failed; off by default (no I/O timed).
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "silent",
    // BENCH_KEEP_WARM_SECONDS=0: ended threads' sandboxes are destroyed, not kept warm
    // (hundreds of one-run threads otherwise fill the node's tmpfs budget with warm ones).
    ...(process.env.BENCH_KEEP_WARM_SECONDS === undefined
      ? {}
      : { SANDBOX_KEEP_WARM_SECONDS: process.env.BENCH_KEEP_WARM_SECONDS }),
    // BENCH_PROCESS_POOL_SIZE=0: no warm pool of blank process sandboxes (decision 0185).
    ...(process.env.BENCH_PROCESS_POOL_SIZE === undefined
      ? {}
      : { SANDBOX_PROCESS_POOL_SIZE: process.env.BENCH_PROCESS_POOL_SIZE }),
  });
  let stack: LocalStack | undefined;
  let server: ReturnType<typeof serve> | undefined;
  const stop = async () => {
    if (server !== undefined) {
      const closing = server;
      await new Promise<void>((done) => closing.close(() => done()));
    }
    await stack?.stop();
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL.nodeId}=${localNodeId(dataDir)}`] },
    });
    await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true })));
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    stack = await startLocalStack({
      env,
      dataDir,
      publicUrl: `http://127.0.0.1:${port}`,
      logger: pino({ level: env.LOG_LEVEL }),
      ...(tracing === undefined ? {} : { tracing }),
      ...(workerConcurrency === undefined ? {} : { workerConcurrency }),
    });
    const tiers = stack.sandboxDriver.tiers;
    const notReady = tiers.filter((t) => !t.ready);
    if (notReady.length > 0) {
      // Both tiers are measured: a missing one would silently shrink the comparison.
      throw new Error(
        `sandbox tiers not ready: ${notReady.map((t) => `${t.tier}: ${t.detail}`).join("; ")}`,
      );
    }
    const app = stack.app;
    await new Promise<void>((listening) => {
      server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, () => listening());
    });
    const url = `http://127.0.0.1:${port}`;
    const secret = stack.secrets.devJwtSecret;
    const token = await mintDevToken(secret, uid);
    return {
      url,
      nodeId: localNodeId(dataDir),
      image: await resolveSandboxImage({
        configured: env.SANDBOX_IMAGE,
        runtimeDir: env.RUNTIME_ASSETS_DIR,
      }),
      api: createApi(url, token),
      token,
      adminToken: await mintDevToken(secret, `${uid}-admin`, { admin: true }),
      dataDir,
      apiFor: async (other) => createApi(url, await mintDevToken(secret, other)),
      stop,
    };
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}

export type RunTimes = {
  /** From just before the submit POST to the first SSE event of the run. */
  firstEventMs: number;
  /** From just before the submit POST to its `run.completed` event. */
  terminalMs: number;
  /** `run.completed`'s status. */
  status: string;
  /** `run.completed`'s error, for the message when a benchmark run did not succeed. */
  error?: unknown;
};

/** The run's `agent` options the benchmarks vary (docs/api.md "Runs"). */
export type AgentOptions = {
  sandbox?: "container" | "process";
  approvals?: { tools: string[] | "all" };
  /** Before-run checkpoint (docs/api.md "Checkpoints"). */
  checkpoint?: boolean;
};

export type Api = {
  /** A root thread (with its project: a new implicit one unless projectId is given). */
  newThread(projectId?: string): Promise<{ threadId: string; projectId: string }>;
  /** Submits `input` in the thread and follows its events to `run.completed`. */
  run(threadId: string, input: string, agent?: AgentOptions): Promise<RunTimes>;
  /** Submits without waiting; `events` resolves at `run.completed`. */
  start(
    threadId: string,
    input: string,
    onEvent?: (type: string) => void,
    agent?: AgentOptions,
  ): Promise<{ runId: string; events: Promise<RunTimes> }>;
  cancel(runId: string): Promise<void>;
};

function createApi(url: string, token: string): Api {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!res.ok) {
      throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    }
    return res.json() as Promise<Record<string, unknown>>;
  };

  const start: Api["start"] = async (threadId, input, onEvent, agent) => {
    const submittedAt = performance.now();
    const run = await post(
      `/v1/threads/${threadId}/runs`,
      agent === undefined ? { input } : { input, agent },
    );
    const runId = String(run.run_id);
    return { runId, events: follow(runId, submittedAt, onEvent) };
  };

  /** Reads the run's SSE stream frame by frame until `run.completed`. */
  const follow = async (
    runId: string,
    submittedAt: number,
    onEvent?: (type: string) => void,
  ): Promise<RunTimes> => {
    const res = await fetch(`${url}/v1/runs/${runId}/events`, {
      headers: { ...headers, accept: "text/event-stream" },
      signal: AbortSignal.timeout(EVENT_STREAM_TIMEOUT_MS),
    });
    if (res.status !== 200 || res.body === null) {
      throw new Error(`GET events of ${runId}: ${res.status} ${await res.text()}`);
    }
    const decoder = new TextDecoder();
    let buffer = "";
    let firstEventMs: number | undefined;
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parseFrame(frame);
        // `retry:` and keep-alive frames carry no event.
        if (event === undefined) continue;
        const at = performance.now() - submittedAt;
        firstEventMs ??= at;
        onEvent?.(event.type);
        if (event.type === "run.completed") {
          await res.body.cancel().catch(() => {});
          return {
            firstEventMs,
            terminalMs: at,
            status: String(event.data.status),
            error: event.data.error,
          };
        }
      }
    }
    throw new Error(`the event stream of ${runId} ended before run.completed`);
  };

  return {
    async newThread(projectId) {
      const thread = await post(
        "/v1/threads",
        projectId === undefined ? {} : { project_id: projectId },
      );
      return { threadId: String(thread.thread_id), projectId: String(thread.project_id) };
    },
    async run(threadId, input, agent) {
      const { events } = await start(threadId, input, undefined, agent);
      return events;
    },
    start,
    async cancel(runId) {
      await post(`/v1/runs/${runId}/cancel`, {});
    },
  };
}

/** One SSE frame's event (`event:` + `data:` lines), or undefined for other frames. */
function parseFrame(frame: string): { type: string; data: Record<string, unknown> } | undefined {
  let type: string | undefined;
  let data = "";
  for (const line of frame.split("\n")) {
    if (line.startsWith("event:")) type = line.slice(6).trim();
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  if (type === undefined || data === "") return undefined;
  const parsed = JSON.parse(data) as { data?: Record<string, unknown> };
  return { type, data: parsed.data ?? {} };
}

export type ContainerCount = {
  /** Containers created and destroyed since the count started. */
  created(): number;
  destroyed(): number;
  close(): void;
};

/** Counts `create` and `destroy` events of one node's sandbox containers (Docker events). */
export async function countContainers(docker: Docker, nodeId: string): Promise<ContainerCount> {
  const stream = (await docker.getEvents({
    filters: {
      type: ["container"],
      event: ["create", "destroy"],
      label: [`${LABEL.nodeId}=${nodeId}`],
    },
  })) as NodeJS.ReadableStream & { destroy(): void };
  let created = 0;
  let destroyed = 0;
  let buffer = "";
  stream.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8");
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
      const line = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 1);
      if (line === "") continue;
      const action = (JSON.parse(line) as { Action?: string }).Action;
      if (action === "create") created++;
      else if (action === "destroy") destroyed++;
    }
  });
  stream.on("error", () => {});
  return {
    created: () => created,
    destroyed: () => destroyed,
    close: () => stream.destroy(),
  };
}
