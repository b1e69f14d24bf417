import { availableParallelism, totalmem } from "node:os";
import { z } from "zod";
import { DEFAULT_WORKER_CONCURRENCY } from "../../shared/env/agent-host-env.ts";

const MIB = 1024 * 1024;
const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;

const positiveInt = () => z.number().int().positive();
/** Live sandboxes' tmpfs may pin at most 1/this of the host's memory by default (decision 0142). */
const TMPFS_MEMORY_SHARE = 2;
const NANO_CPUS_PER_CPU = 1_000_000_000;
/** The smallest CPU limit a sandbox gets, whatever the share (a tenth of a CPU). */
const MIN_SANDBOX_NANO_CPUS = NANO_CPUS_PER_CPU / 10;

/**
 * The default CPU limit of one sandbox: the node's CPUs divided by the runs it executes
 * at once, so `slots` busy sandboxes together fit the machine and no tenant's sandbox is
 * handed the whole node (#13). Never below a tenth of a CPU.
 */
export function nodeShareNanoCpus(cpus: number, slots: number): number {
  return Math.max(MIN_SANDBOX_NANO_CPUS, Math.floor((cpus * NANO_CPUS_PER_CPU) / slots));
}

/**
 * Sandbox limits and timings. Parsed once where agent-host is wired (main.ts), never
 * at import time; tests pass small values to make timeouts and caps observable.
 */
export const sandboxConfigSchema = z
  .object({
    image: z
      .string()
      .min(1)
      .describe("Docker image of every sandbox; it must have user 1000:1000 and /home/gem."),
    networkMode: z
      .string()
      .min(1)
      .default("none")
      .describe("Docker NetworkMode; 'none' (only loopback) unless the operator opts in."),
    pidsLimit: positiveInt()
      .default(512)
      .describe("Maximum number of processes in one sandbox (stops fork bombs)."),
    memoryBytes: positiveInt()
      .default(2048 * MIB)
      .describe("Memory limit of one sandbox, tmpfs pages included; swap is not allowed."),
    nanoCpus: positiveInt()
      .default(() => nodeShareNanoCpus(availableParallelism(), DEFAULT_WORKER_CONCURRENCY))
      .describe(
        "CPU limit in billionths of a CPU (2e9 = two CPUs); default the node's share (nodeShareNanoCpus).",
      ),
    tmpSizeBytes: positiveInt()
      .default(512 * MIB)
      .describe("Size of the private tmpfs at /tmp."),
    homeSizeBytes: positiveInt()
      .default(512 * MIB)
      .describe(
        "Size of the private tmpfs at /home/gem (mount points of the two binds live in it).",
      ),
    execTimeoutMs: positiveInt()
      .default(10 * MINUTE_MS)
      .describe("Wall-clock limit of one exec, and the most an exec request may ask for."),
    maxOutputBytesPerStream: positiveInt()
      .default(1 * MIB)
      .describe("Bytes of stdout and of stderr kept per exec; the rest is dropped and counted."),
    killGraceMs: positiveInt()
      .default(5 * SECOND_MS)
      .describe("After killing a timed-out exec, how long to wait for its output stream to close."),
    cancelWaitMs: positiveInt()
      .default(SECOND_MS / 2)
      .describe(
        "How long a cancelled container exec waits for its kill before the cancel is reported; the kill goes on, bounded, in the background (docs/decisions/0079).",
      ),
    createTimeoutMs: positiveInt()
      .default(2 * MINUTE_MS)
      .describe(
        "Bound on one create (Docker create + start + checks), and on waiting for another's.",
      ),
    dockerCallTimeoutMs: positiveInt()
      .default(30 * SECOND_MS)
      .describe(
        "Longest one Docker API call may take (an inspect, an exec's create or start, a remove; an exec's run time is execTimeoutMs): a hung engine fails the call with a message instead of holding it for ever.",
      ),
    drainTimeoutMs: positiveInt()
      .default(30 * SECOND_MS)
      .describe("How long destroy waits for in-flight execs before cancelling them."),
    idleTimeoutMs: positiveInt()
      .default(30 * MINUTE_MS)
      .describe("A sandbox unused for this long is destroyed by the idle reaper."),
    keepWarmMs: z
      .number()
      .int()
      .nonnegative()
      .default(60 * SECOND_MS)
      .describe(
        "After an execution tree ends, its sandbox stays live this long for the conversation's next turn (0: destroy at once).",
      ),
    processPoolSize: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe(
        "Blank process-tier sandboxes (their /tmp and home tmpfs, user namespace and directories, no user's files) kept ready for new threads' first runs (SANDBOX_PROCESS_POOL_SIZE; decision 0185). Each counts in the tmpfs budget and gives way before any warm sandbox is evicted.",
      ),
    tmpfsBudgetBytes: z
      .number()
      .int()
      .nonnegative()
      .default(() => Math.floor(totalmem() / TMPFS_MEMORY_SHARE))
      .describe(
        "Memory the node's live sandboxes (running and kept warm) may pin in tmpfs, each counted at its /tmp plus home sizes (SANDBOX_TMPFS_BUDGET_MB; default half the host's memory). Keeping one warm or creating one over it evicts the oldest warm sandboxes of any user first; a create that still does not fit is refused (sandbox_memory_budget).",
      ),
    reaperIntervalMs: positiveInt()
      .default(15 * SECOND_MS)
      .describe("How often the idle reaper looks for idle sandboxes."),
    reconcileIntervalMs: positiveInt()
      .default(5 * MINUTE_MS)
      .describe("How often the reconciler compares this node's containers with Postgres."),
    nodeTtlMs: positiveInt()
      .default(30 * SECOND_MS)
      .describe(
        "A node silent this long is lost (NODE_TTL_SECONDS, the sweeper's too): its sandbox rows no longer hold their scope here.",
      ),
    destroyingStaleMs: positiveInt()
      .default(10 * MINUTE_MS)
      .describe(
        "A row left 'destroying' this long (its destroyer crashed) is finished by the reconciler.",
      ),
  })
  .refine((c) => c.idleTimeoutMs > c.execTimeoutMs, {
    message:
      "idleTimeoutMs must be longer than execTimeoutMs, or the reaper could destroy a sandbox while an exec still runs in it: raise idleTimeoutMs",
    path: ["idleTimeoutMs"],
  })
  .refine((c) => c.destroyingStaleMs > c.drainTimeoutMs + c.killGraceMs, {
    message:
      "destroyingStaleMs must exceed drainTimeoutMs + killGraceMs, or the reconciler could race a destroy that is still draining: raise destroyingStaleMs",
    path: ["destroyingStaleMs"],
  });

export type SandboxConfig = z.infer<typeof sandboxConfigSchema>;
export type SandboxConfigInput = z.input<typeof sandboxConfigSchema>;

/** The part of the configuration the sandbox manager uses: timings and bounds, no driver setting. */
export type SandboxTimings = Pick<
  SandboxConfig,
  | "execTimeoutMs"
  | "createTimeoutMs"
  | "drainTimeoutMs"
  | "idleTimeoutMs"
  | "keepWarmMs"
  | "reaperIntervalMs"
  | "reconcileIntervalMs"
  | "destroyingStaleMs"
  | "killGraceMs"
  | "nodeTtlMs"
  // The tmpfs budget counts each live sandbox at its tmpfs sizes (decisions 0106, 0142).
  | "tmpSizeBytes"
  | "homeSizeBytes"
  | "tmpfsBudgetBytes"
>;

/** The limits both tiers enforce on one sandbox. */
export type SandboxLimits = Pick<
  SandboxConfig,
  "pidsLimit" | "memoryBytes" | "nanoCpus" | "tmpSizeBytes" | "homeSizeBytes"
>;
