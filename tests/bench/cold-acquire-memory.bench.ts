// A cold acquire with the process's memory grown, against the same without (issue 41,
// decision 0119). A fork of the process blocks its event loop for as long as copying its
// page tables takes, in proportion to the memory it touched (44 ms at 750 MB): a cold
// acquire that forks (`mount`/`umount` children) slows down as agent-host grows, one that
// makes its syscalls itself does not. Per tier, rounds alternate between no ballast and
// 700 MB of touched anonymous memory mapped into this process (the local stack runs at
// 700–830 MB), so the machine's drift falls on both alike; the process RSS is printed next
// to each figure. The teardown (destroy) is timed too, as information.
// Target: cold acquire with ballast / without ≤ 1.1, per tier.
import { randomUUID } from "node:crypto";
import { chown, mkdir, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { address, load } from "koffi";
import { pino } from "pino";
import { DockerDriver } from "../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxDriver } from "../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../agent-host/sandbox/instance/container-labels.ts";
import { SandboxManager } from "../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import {
  type ProcessDriver,
  processDriverFrom,
} from "../../agent-host/sandbox/process/process-driver.ts";
import { processPreflight } from "../../agent-host/sandbox/process/process-preflight.ts";
import type { SandboxCgroups } from "../../agent-host/sandbox/process/sandbox-cgroups.ts";
import { sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import type { SandboxTier } from "../../agent-host/sandbox/sandbox-tier.ts";
import { TieredDriver } from "../../agent-host/sandbox/tiered-driver.ts";
import { nodes } from "../../shared/db/schema/nodes.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import { removeContainersLabelled } from "../support/docker.ts";
import { busyboxRuntimeDir } from "../support/process-tier.ts";
import { sandboxTestImage, startBenchStack } from "./bench-stack.ts";
import { benchTargets, report, summarize } from "./measure.ts";

const BALLAST_BYTES = 700 * 2 ** 20;
const ROUNDS = 12;
const WARMUP_ROUNDS = 1;
const TARGET = 1.1;
const UID = "bench";
const WORKDIR = "work";
const MB = 2 ** 20;
const TIERS = ["container", "process"] as const;
const targets = benchTargets(
  "cold-acquire-memory",
  TIERS.map((tier) => ({ measure: `${tier}-cold-acquire`, op: "<=" as const, target: TARGET })),
);

const image = await sandboxTestImage();
const docker = new Docker();
const nodeId = `bench-${randomUUID().slice(0, 8)}`;
const stack = await startBenchStack({ maxConnections: 10 });
const { db, dataRoot } = stack;
const stateDir = join(tmpdir(), `workcell-bench-memory-${randomUUID().slice(0, 8)}`);
const logger = pino({ level: "silent" });
const ballast = createBallast(BALLAST_BYTES);
let processDriver: ProcessDriver | undefined;
let cgroups: SandboxCgroups | undefined;

try {
  await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
  const workspace = join(dataRoot, "users", uidDirname(UID), "workspace");
  await mkdir(join(workspace, WORKDIR), { recursive: true });
  await chown(workspace, 1000, 1000);
  await chown(join(workspace, WORKDIR), 1000, 1000);

  const config = sandboxConfigSchema.parse({ image });
  const drivers = new Map<SandboxTier, SandboxDriver>([
    ["container", new DockerDriver({ docker, logger, dataRoot, nodeId, config })],
  ]);
  const found = await processPreflight({ stateDir, cgroupParent: `workcell-bench/${nodeId}` });
  if (found.ready) {
    cgroups = found.parts.cgroups;
    processDriver = processDriverFrom(found.parts, {
      logger,
      dataRoot,
      runtimeDir: await busyboxRuntimeDir(),
      config,
    });
    drivers.set("process", processDriver);
  }
  const manager = new SandboxManager({
    db,
    driver: new TieredDriver(drivers, []),
    logger,
    nodeId,
    config,
  });

  for (const tier of TIERS) {
    if (!drivers.has(tier)) {
      targets.skip(`${tier}-cold-acquire`, found.ready ? "no driver" : found.missing);
      continue;
    }
    const sides = [false, true].map((heavy) => ({
      heavy,
      acquire: [] as number[],
      destroy: [] as number[],
      rss: [] as number[],
    }));
    for (let round = -WARMUP_ROUNDS; round < ROUNDS; round++) {
      for (const side of sides) {
        if (side.heavy) ballast.touch();
        try {
          const rss = process.memoryUsage().rss;
          let started = performance.now();
          const out = await manager.acquire(
            { uid: UID, runtimeScopeId: randomUUID(), workdirPath: WORKDIR, tier },
            AbortSignal.timeout(120_000),
          );
          const acquired = performance.now() - started;
          if (!out.ok) throw new Error(`acquire refused: ${out.reason}`);
          if (tier === "process" && out.handle.instanceId) {
            // Untimed: the new generation's standby build (decision 0084) is not the teardown's.
            await processDriver?.standbyReady(out.handle.instanceId);
          }
          started = performance.now();
          const ended = await manager.destroy(out.handle, AbortSignal.timeout(120_000));
          const destroyed = performance.now() - started;
          if (!ended.ok) throw new Error(`destroy refused: ${JSON.stringify(ended)}`);
          if (round < 0) continue;
          side.acquire.push(acquired);
          side.destroy.push(destroyed);
          side.rss.push(rss);
        } finally {
          ballast.release();
        }
      }
    }
    const [plain, heavy] = sides.map((side) => {
      // The median RSS of the side's rounds, read just before each acquire.
      const rss = `RSS ${Math.round(summarize("", side.rss).medianMs / MB)} MB`;
      const label = side.heavy ? `${BALLAST_BYTES / MB} MB ballast` : "no ballast";
      return {
        acquire: summarize(`cold acquire, ${label} (${rss})`, side.acquire),
        destroy: summarize(`teardown, ${label} (${rss})`, side.destroy),
      };
    });
    if (!plain || !heavy) throw new Error("no samples");
    report(`${tier} tier: cold acquire with and without ballast`, plain.acquire, [heavy.acquire]);
    report(`${tier} tier: teardown with and without ballast (info)`, plain.destroy, [
      heavy.destroy,
    ]);
    targets.record(`${tier}-cold-acquire`, heavy.acquire.medianMs / plain.acquire.medianMs);
  }
} catch (error) {
  console.error("cold-acquire-memory bench failed:", error);
  process.exitCode = 1;
} finally {
  ballast.release();
  await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
  for (const name of await readdir(stateDir).catch(() => [])) {
    const c = await processDriver
      ?.inspect({ instanceId: name, tier: "process" }, AbortSignal.timeout(30_000))
      .catch(() => undefined);
    if (c) await processDriver?.destroy(c, AbortSignal.timeout(30_000)).catch(() => {});
  }
  await rm(stateDir, { recursive: true, force: true });
  await cgroups?.removeParent().catch(() => {});
  await stack.stop();
}

/**
 * Anonymous private memory mapped into this process and written page by page (so every
 * page is resident and in its page tables, as a grown heap is), and unmapped again: the
 * rounds without ballast really are without it, which a garbage-collected Buffer would
 * not guarantee.
 */
function createBallast(bytes: number): { touch(): void; release(): void } {
  const libc = load("libc.so.6");
  const mmap = libc.func(
    "void *mmap(void *addr, size_t length, int prot, int flags, int fd, long offset)",
  );
  const munmap = libc.func("int munmap(void *addr, size_t length)");
  const memset = libc.func("void *memset(void *s, int c, size_t n)");
  const PROT_READ_WRITE = 0x3;
  const MAP_PRIVATE_ANONYMOUS = 0x22;
  const MAP_FAILED = 2n ** 64n - 1n;
  let mapped: unknown;
  return {
    touch() {
      if (mapped) return;
      const at = mmap(null, bytes, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0);
      // MAP_FAILED is (void *) -1.
      if (!at || address(at) === MAP_FAILED) throw new Error("mmap of the ballast failed");
      memset(at, 1, bytes);
      mapped = at;
    },
    release() {
      if (!mapped) return;
      munmap(mapped, bytes);
      mapped = undefined;
    },
  };
}
