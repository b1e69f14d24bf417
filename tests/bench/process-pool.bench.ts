// The process tier's warm pool (issue 41 item 2, decision 0185): a new generation's
// acquire, and the acquire plus its first exec of `true`, through the sandbox manager on
// real PostgreSQL, with a blank ready in the pool vs made in full (a node without a pool),
// rounds interleaved so that the machine's load falls on both alike. Before each timed
// acquire the pool's refill is awaited, untimed (a new thread finds a blank ready when
// threads start no faster than blanks are made); each generation is destroyed untimed.
import { randomUUID } from "node:crypto";
import { chown, mkdir, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { SandboxManager } from "../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import {
  type ProcessDriver,
  processDriverFrom,
} from "../../agent-host/sandbox/process/process-driver.ts";
import { processPreflight } from "../../agent-host/sandbox/process/process-preflight.ts";
import type { SandboxCgroups } from "../../agent-host/sandbox/process/sandbox-cgroups.ts";
import { sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import type { SandboxHandle } from "../../agent-host/sandbox/sandbox-handle.ts";
import { TieredDriver } from "../../agent-host/sandbox/tiered-driver.ts";
import { nodes } from "../../shared/db/schema/nodes.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import { busyboxRuntimeDir } from "../support/process-tier.ts";
import { startBenchStack } from "./bench-stack.ts";
import { benchTargets, report, rssNote, summarize } from "./measure.ts";

const ROUNDS = 30;
const POOL_SIZE = 2;
const targets = benchTargets("process-pool", [
  { measure: "pooled-acquire-vs-full", op: "<=", target: 0.8 },
  { measure: "pooled-acquire-exec-vs-full", op: "<=", target: 0.9 },
]);
const UID = "bench";
const WORKDIR = "work";

const stack = await startBenchStack({ maxConnections: 20 });
const { db, dataRoot } = stack;
const logger = pino({ level: "silent" });
const sides: Array<{ stateDir: string; cgroups?: SandboxCgroups; driver?: ProcessDriver }> = [];

try {
  const workspace = join(dataRoot, "users", uidDirname(UID), "workspace");
  await mkdir(join(workspace, WORKDIR), { recursive: true });
  await chown(workspace, 1000, 1000);
  await chown(join(workspace, WORKDIR), 1000, 1000);
  const config = sandboxConfigSchema.parse({ image: "unused", keepWarmMs: 0 });
  const runtimeDir = await busyboxRuntimeDir();

  /** A node of its own (state dir, cgroup parent, manager) with or without a pool. */
  const node = async (poolSize: number) => {
    const nodeId = `bench-pool-${randomUUID().slice(0, 8)}`;
    await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
    const stateDir = join(tmpdir(), `workcell-bench-pool-${randomUUID().slice(0, 8)}`);
    const side: (typeof sides)[number] = { stateDir };
    sides.push(side);
    const found = await processPreflight({ stateDir, cgroupParent: `workcell-bench/${nodeId}` });
    if (!found.ready) throw new Error(`process tier not ready: ${found.missing}`);
    side.cgroups = found.parts.cgroups;
    const driver = processDriverFrom(found.parts, {
      logger,
      dataRoot,
      runtimeDir,
      config,
      poolSize,
    });
    side.driver = driver;
    const manager = new SandboxManager({
      db,
      driver: new TieredDriver(new Map([["process", driver]]), []),
      logger,
      nodeId,
      config,
    });
    await manager.start(AbortSignal.timeout(60_000));
    return { driver, manager };
  };
  const pooled = await node(POOL_SIZE);
  const full = await node(0);

  const acquire = async (n: typeof pooled): Promise<SandboxHandle> => {
    const out = await n.manager.acquire(
      { uid: UID, runtimeScopeId: randomUUID(), workdirPath: WORKDIR, tier: "process" },
      AbortSignal.timeout(120_000),
    );
    if (!out.ok || !out.created)
      throw new Error(`acquire refused or not new: ${JSON.stringify(out)}`);
    return out.handle;
  };
  const execTrue = async (n: typeof pooled, handle: SandboxHandle) => {
    const out = await n.manager.exec(handle, { cmd: ["true"] }, AbortSignal.timeout(60_000));
    if (!out.ok || out.result.exitCode !== 0) throw new Error("exec failed");
  };
  const blanksOf = async (n: typeof pooled) =>
    (await readdir(sides[n === pooled ? 0 : 1]?.stateDir ?? "")).filter((f) =>
      f.startsWith("process-pool-"),
    );
  const times = {
    pooledAcquire: [] as number[],
    fullAcquire: [] as number[],
    pooledBoth: [] as number[],
    fullBoth: [] as number[],
  };
  let taken = 0;
  for (let round = -3; round < ROUNDS; round++) {
    for (const [n, acquireTimes, bothTimes] of [
      [pooled, times.pooledAcquire, times.pooledBoth],
      [full, times.fullAcquire, times.fullBoth],
    ] as const) {
      // Untimed: the refill after the last create has settled.
      await n.driver.pool.settled();
      const blanksBefore = await blanksOf(n);
      const started = performance.now();
      const handle = await acquire(n);
      const acquired = performance.now();
      await execTrue(n, handle);
      const done = performance.now();
      // A blank was taken when one of those present before is gone.
      const blanksAfter = await blanksOf(n);
      if (n === pooled && blanksBefore.some((b) => !blanksAfter.includes(b))) taken++;
      if (round >= 0) {
        acquireTimes.push(acquired - started);
        bothTimes.push(done - started);
      }
      await n.manager.destroy(handle, AbortSignal.timeout(60_000));
    }
  }
  const fullAcquire = summarize(`acquire, made in full (${rssNote()})`, times.fullAcquire);
  const pooledAcquire = summarize(
    `acquire, from a pooled blank (${rssNote()})`,
    times.pooledAcquire,
  );
  const fullBoth = summarize("acquire + first exec `true`, made in full", times.fullBoth);
  const pooledBoth = summarize(
    "acquire + first exec `true`, from a pooled blank",
    times.pooledBoth,
  );
  report("new process-tier generation: from the warm pool vs made in full", fullAcquire, [
    pooledAcquire,
  ]);
  report("new process-tier generation and its first exec", fullBoth, [pooledBoth]);
  console.log(`(${taken} of ${ROUNDS + 3} pooled acquires found a blank ready)`);
  targets.record("pooled-acquire-vs-full", pooledAcquire.medianMs / fullAcquire.medianMs);
  targets.record("pooled-acquire-exec-vs-full", pooledBoth.medianMs / fullBoth.medianMs);
  await Promise.all([pooled.manager.stop(), full.manager.stop()]);
} catch (error) {
  console.error("process-pool bench failed:", error);
  process.exitCode = 1;
} finally {
  for (const side of sides) {
    await side.driver?.pool.drain().catch(() => {});
    for (const name of await readdir(side.stateDir).catch(() => [])) {
      const c = await side.driver
        ?.inspect({ instanceId: name, tier: "process" }, AbortSignal.timeout(30_000))
        .catch(() => undefined);
      if (c) await side.driver?.destroy(c, AbortSignal.timeout(30_000)).catch(() => {});
    }
    await rm(side.stateDir, { recursive: true, force: true });
    await side.cgroups?.removeParent().catch(() => {});
  }
  await stack.stop();
}
