// The approvals bench's "many runs waiting at once" (issue 36): N runs, each in its own
// new thread and project, on the process tier, paused before their `bash` call. Submitted
// in windows (bounded parallelism: the node's slots take them WORKER_CONCURRENCY at a
// time, and the uid's pending runs stay under the queued-runs limit); the next window goes
// once the user has nothing pending or running. Measured: the wall time, the worker slots
// the waiting runs hold (runs `running`, the user's running_runs), the live sandboxes of
// the node (a waiting run holds none: the keep-warm rule keeps at most two of a uid's),
// the RSS growth of this process (the whole stack runs in it) per waiting run; then a
// sample is approved and each must run its command exactly once (its outputs/effect.txt has
// one line; a second decision is 409).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { LOCAL_DATA_ROOT_DIR } from "../../infra/local/local-stack.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import type { BenchStack } from "./local-stack-bench.ts";

/** The shell model's command: one line in outputs/effect.txt per execution. */
export const EFFECT_INPUT = "mkdir -p outputs && echo ran >> outputs/effect.txt";
/** The uid the approvals bench's stack was started for (its token's subject). */
export const BENCH_UID = "bench";
const WINDOW = 32;
const PARALLEL = 8;
const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);

// A full collection before each memory reading, so the growth is what stays, not garbage.
setFlagsFromString("--expose-gc");
const collect = runInNewContext("gc") as () => void;
const settledMemory = () => {
  collect();
  return process.memoryUsage();
};

type Call = (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;

export type WaitingResult = {
  readonly awaiting: number;
  readonly holdingSlots: number;
  readonly runningRuns: number;
  readonly liveSandboxes: number;
  readonly rssGrowthMiB: number;
  /** The JS heap in use after a full collection, grown by (MiB). */
  readonly heapGrowthMiB: number;
  readonly peakRssMiB: number;
  readonly wallSeconds: number;
  readonly sampleExactlyOnce: number;
  /** Sampled runs whose command ran more than once (must be 0). */
  readonly sampleRanTwice: number;
  readonly sample: number;
};

/** Runs `fn` over `items`, at most `parallel` at a time. */
async function eachLimited<T, R>(items: readonly T[], parallel: number, fn: (t: T) => Promise<R>) {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T);
    }),
  );
  return out;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `GET /v1/usage` until the user has nothing pending or running. */
async function settled(call: Call): Promise<{ running: number }> {
  for (;;) {
    const usage = await call("GET", "/v1/usage");
    if (usage.queued_runs === 0 && usage.running_runs === 0) {
      return { running: Number(usage.running_runs) };
    }
    await pause(200);
  }
}

export async function measureWaiting(
  bench: BenchStack,
  call: Call,
  adminCall: Call,
  count: number,
  sample: number,
  ask: Record<string, unknown>,
): Promise<WaitingResult> {
  const began = performance.now();
  const before = settledMemory();
  let peakRss = before.rss;
  const runs: { runId: string; projectId: string }[] = [];
  for (let i = 0; i < count; i += WINDOW) {
    const window = Array.from({ length: Math.min(WINDOW, count - i) }, (_, k) => i + k);
    runs.push(
      ...(await eachLimited(window, PARALLEL, async () => {
        const out = await call("POST", "/v1/runs", {
          input: EFFECT_INPUT,
          agent: { sandbox: "process", ...ask },
        });
        const run = out.run as { run_id: string };
        const thread = out.thread as { project_id: string };
        return { runId: run.run_id, projectId: thread.project_id };
      })),
    );
    await settled(call);
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    if ((i / WINDOW) % 5 === 4) {
      console.log(
        `  ${runs.length} waiting after ${((performance.now() - began) / 1000).toFixed(0)} s`,
      );
    }
  }
  const wallSeconds = (performance.now() - began) / 1000;
  const after = settledMemory();
  const rssGrowthMiB = (after.rss - before.rss) / 2 ** 20;
  const heapGrowthMiB = (after.heapUsed - before.heapUsed) / 2 ** 20;
  const statuses = await eachLimited(runs, PARALLEL, async ({ runId }) =>
    String((await call("GET", `/v1/runs/${runId}`)).status),
  );
  const awaiting = statuses.filter((s) => s === "awaiting_approval").length;
  const holdingSlots = statuses.filter((s) => s === "running").length;
  const { running } = await settled(call);
  const nodes = (await adminCall("GET", "/v1/admin/nodes")).items as { live_sandboxes: number }[];
  const liveSandboxes = nodes.reduce((n, node) => n + node.live_sandboxes, 0);

  // A sample, spread over the whole set, approved: each runs its command exactly once.
  const step = Math.max(1, Math.floor(runs.length / sample));
  const chosen = runs.filter((_, i) => i % step === 0).slice(0, sample);
  const once = await eachLimited(chosen, 4, async ({ runId, projectId }) => {
    const { items } = (await call("GET", `/v1/runs/${runId}/approvals`)) as {
      items: { approval_id: string; status: string }[];
    };
    const pending = items.find((a) => a.status === "pending");
    if (pending === undefined) {
      console.log(`  run ${runId}: no pending approval`);
      return { ok: false, ranTwice: false };
    }
    const path = `/v1/runs/${runId}/approvals/${pending.approval_id}`;
    await call("POST", path, { decision: "approve" });
    let status = "";
    while (!TERMINAL.has(status)) {
      await pause(100);
      status = String((await call("GET", `/v1/runs/${runId}`)).status);
    }
    const again = await call("POST", path, { decision: "approve" }).catch((e: Error) => e);
    const refused = again instanceof Error && again.message.includes(": 409 ");
    const lines = await effectLines(bench, projectId, call);
    const ok = status === "succeeded" && refused && lines === 1;
    if (!ok) {
      const run = await call("GET", `/v1/runs/${runId}`);
      console.log(
        `  run ${runId}: ${status} ${JSON.stringify(run.error ?? null)}, second decision 409: ${refused}, ran ${lines}x`,
      );
    }
    return { ok, ranTwice: lines > 1 };
  });
  return {
    awaiting,
    holdingSlots,
    runningRuns: running,
    liveSandboxes,
    rssGrowthMiB,
    heapGrowthMiB,
    peakRssMiB: peakRss / 2 ** 20,
    wallSeconds,
    sampleExactlyOnce: once.filter((o) => o.ok).length,
    sampleRanTwice: once.filter((o) => o.ranTwice).length,
    sample: chosen.length,
  };
}

/** Lines of the project's outputs/effect.txt as the node holds them (absent: 0). */
async function effectLines(bench: BenchStack, projectId: string, call: Call): Promise<number> {
  const project = await call("GET", `/v1/projects/${projectId}`);
  const file = join(
    bench.dataDir,
    LOCAL_DATA_ROOT_DIR,
    "users",
    uidDirname(BENCH_UID),
    "workspace",
    String(project.workdir_path),
    "outputs",
    "effect.txt",
  );
  if (!existsSync(file)) return 0;
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l === "ran").length;
}
