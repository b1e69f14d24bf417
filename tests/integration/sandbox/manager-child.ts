// A stand-in agent-host process for the cross-process tests: it builds its own
// SandboxManager on the shared database and Docker, does one thing, and reports on
// stdout as JSON lines. Run as `node manager-child.ts '<json args>'`.
//
//   acquire-many        wait for "go" on stdin, then `count` concurrent acquires
//   hang-after-create   acquire, but freeze right after the container started and
//                       before the generation commits (the parent kill -9s it there)
//   hang-after-acquire  acquire fully, then freeze (the parent kill -9s it)
import Docker from "dockerode";
import { pino } from "pino";
import postgres from "postgres";
import { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxDriver } from "../../../agent-host/sandbox/driver.ts";
import { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import { processDriverFrom } from "../../../agent-host/sandbox/process/process-driver.ts";
import { processPreflight } from "../../../agent-host/sandbox/process/process-preflight.ts";
import { sandboxConfigSchema } from "../../../agent-host/sandbox/sandbox-config.ts";
import { createDb } from "../../../shared/db/client.ts";

export type ChildArgs = {
  mode: "acquire-many" | "hang-after-create" | "hang-after-acquire";
  dbUrl: string;
  dataRoot: string;
  nodeId: string;
  image: string;
  uid: string;
  runtimeScopeId: string;
  workdirPath: string;
  count?: number;
} & ChildTierArgs;

/** Absent: the container tier (Docker); present: the process tier with this node-local state. */
export type ChildTierArgs = {
  process?: { stateDir: string; cgroupParent: string; runtimeDir: string };
};

const args = JSON.parse(process.argv[2] ?? "{}") as ChildArgs;
const say = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`);
const forever = () => new Promise<never>(() => setInterval(() => {}, 1 << 30));

const sql = postgres(args.dbUrl, { max: 20, onnotice: () => {} });
const config = sandboxConfigSchema.parse({ image: args.image, execTimeoutMs: 20_000 });
const logger = pino({ level: "silent" });
const real: SandboxDriver = args.process
  ? await processDriver(args.process)
  : new DockerDriver({
      docker: new Docker(),
      logger,
      dataRoot: args.dataRoot,
      nodeId: args.nodeId,
      config,
    });

async function processDriver(p: NonNullable<ChildTierArgs["process"]>): Promise<SandboxDriver> {
  const found = await processPreflight({ stateDir: p.stateDir, cgroupParent: p.cgroupParent });
  if (!found.ready) throw new Error(found.missing);
  const { parts } = found;
  return processDriverFrom(parts, {
    logger,
    dataRoot: args.dataRoot,
    runtimeDir: p.runtimeDir,
    config,
  });
}
const driver: SandboxDriver =
  args.mode === "hang-after-create"
    ? {
        create: async (spec, signal) => {
          const created = await real.create(spec, signal);
          say({ event: "container-started", generation: spec.generation, created });
          return forever();
        },
        inspect: (id, s) => real.inspect(id, s),
        exec: (ref, req, s) => real.exec(ref, req, s),
        destroy: (ref, s) => real.destroy(ref, s),
        list: (node, s) => real.list(node, s),
      }
    : real;
const manager = new SandboxManager({
  db: createDb(sql),
  driver,
  logger,
  nodeId: args.nodeId,
  config,
});
const request = {
  uid: args.uid,
  runtimeScopeId: args.runtimeScopeId,
  workdirPath: args.workdirPath,
};

if (args.mode === "acquire-many") {
  say({ event: "ready" });
  await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
  const results = await Promise.all(
    Array.from({ length: args.count ?? 1 }, () =>
      manager.acquire(request, AbortSignal.timeout(60_000)),
    ),
  );
  say({ event: "acquired", results });
  await sql.end();
  process.exit(0);
}

const out = await manager.acquire(request, AbortSignal.timeout(60_000));
say({ event: "acquired", result: out });
await forever();
