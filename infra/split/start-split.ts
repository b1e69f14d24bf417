// docs/deploy/split.md, performed: one Postgres database, fauxqs with the run queue, its
// DLQ and the attachments bucket, the control plane (functions/entry/node.ts) with its
// in-process sweeper, and N agent-hosts sharing one data root. Each a process of its own.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHostMounts } from "../../agent-host/sandbox/instance/host-mounts.ts";
import { freePort } from "./free-port.ts";
import { unmountLeftovers } from "./leftover-mounts.ts";
import type { ServiceProcess } from "./service-process.ts";
import {
  agentHostEnv,
  createDatabase,
  dropDatabase,
  type Emulator,
  functionsEnv,
  generateKeys,
  migrateDatabase,
  type SharedSettings,
  startAgentHostProcess,
  startEmulator,
  startFunctions,
} from "./split-steps.ts";

export type SplitOptions = {
  /** A superuser URL of any reachable Postgres; the deployment gets a database of its own. */
  postgresAdminUrl: string;
  /** NODE_IDs of the agent-hosts (default: node-a, node-b). */
  nodeIds?: readonly string[];
  /** NODE_TTL_SECONDS of every process (default 30). */
  nodeTtlSeconds?: number;
  /** NODE_HEARTBEAT_SECONDS of every agent-host (default: a third of the TTL, at least 1). */
  heartbeatSeconds?: number;
  /** SWEEP_INTERVAL_MS of the control plane (default 15000). */
  sweepIntervalMs?: number;
  /** More agent-host variables (SANDBOX_IMAGE, WORKER_CONCURRENCY, …), the same on every node. */
  agentHostExtra?: Record<string, string>;
  /**
   * Variables of one node only, by NODE_ID, over agentHostExtra: e.g. its own `DOCKER_HOST`
   * (`unix:///path/to.sock`, `tcp://host:2375`) or `DOCKER_CALL_TIMEOUT_SECONDS`.
   */
  nodeExtra?: Readonly<Record<string, Record<string, string>>>;
  /** LOG_LEVEL of every process (default warn). */
  logLevel?: string;
};

export type SplitNode = {
  readonly nodeId: string;
  readonly dataPlaneUrl: string;
  /** The running process, or undefined after it was killed or stopped. */
  readonly process: ServiceProcess | undefined;
  /** `kill -9`: no drain, no last heartbeat; resolves once the process is gone. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for the clean exit (the node drains and records itself stopped). */
  terminate(): Promise<number | string>;
  /** Starts this node again with the same NODE_ID and environment. */
  restart(): Promise<void>;
};

export type SplitDeployment = {
  readonly functionsUrl: string;
  /** Signs dev tokens (infra/local/dev-token.ts); `{ admin: true }` ones are admins (ADMIN_CLAIM=admin). */
  readonly devJwtSecret: string;
  readonly databaseUrl: string;
  readonly dataRoot: string;
  readonly emulator: Omit<Emulator, "process">;
  readonly nodes: readonly SplitNode[];
  readonly nodeTtlSeconds: number;
  readonly sweepIntervalMs: number;
  /** Every process's recent output, for a failure message. */
  output(): string;
  /** Stops every process (agent-hosts first), drops the database, removes the data root. */
  stop(): Promise<void>;
};

export async function startSplit(options: SplitOptions): Promise<SplitDeployment> {
  const nodeTtlSeconds = options.nodeTtlSeconds ?? 30;
  const heartbeatSeconds = options.heartbeatSeconds ?? Math.max(1, Math.floor(nodeTtlSeconds / 3));
  const sweepIntervalMs = options.sweepIntervalMs ?? 15_000;
  const logLevel = options.logLevel ?? "warn";
  const cleanups: Array<() => Promise<void>> = [];
  const services: ServiceProcess[] = [];
  const stopAll = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  };
  try {
    const databaseUrl = await createDatabase(options.postgresAdminUrl);
    cleanups.push(() => dropDatabase(options.postgresAdminUrl, databaseUrl));
    await migrateDatabase(databaseUrl);
    const keys = await generateKeys();
    const emulator = await startEmulator(await freePort());
    cleanups.push(() => emulator.process.stop(5_000));
    services.push(emulator.process);
    // The shared filesystem of the nodes (EFS/NFS in production): each node makes what it needs.
    const dataRoot = await mkdtemp(join(tmpdir(), "workcell-split-data-"));
    const stateRoot = await mkdtemp(join(tmpdir(), "workcell-split-state-"));
    cleanups.push(() => rm(dataRoot, { recursive: true, force: true }));
    cleanups.push(() => rm(stateRoot, { recursive: true, force: true }));
    // Before that rm (cleanups run last first): what a killed node left mounted there.
    cleanups.push(() => unmountLeftovers(stateRoot, createHostMounts()));
    const shared: SharedSettings = { databaseUrl, keys, emulator, nodeTtlSeconds, logLevel };

    const nodes: SplitNode[] = [];
    for (const nodeId of options.nodeIds ?? ["node-a", "node-b"]) {
      const env = agentHostEnv(shared, {
        nodeId,
        dataPlanePort: await freePort(),
        metricsPort: 0,
        dataRoot,
        sandboxStateDir: join(stateRoot, nodeId),
        heartbeatSeconds,
        extra: { ...options.agentHostExtra, ...options.nodeExtra?.[nodeId] },
      });
      let current: ServiceProcess | undefined = await startAgentHostProcess(env);
      services.push(current);
      const node: SplitNode = {
        nodeId,
        dataPlaneUrl: env.DATA_PLANE_PUBLIC_URL as string,
        get process() {
          return current;
        },
        async kill9() {
          const gone = current;
          current = undefined;
          gone?.signal("SIGKILL");
          await gone?.exited;
        },
        async terminate() {
          const gone = current;
          current = undefined;
          gone?.signal("SIGTERM");
          return (await gone?.exited) ?? "not running";
        },
        async restart() {
          if (current !== undefined) throw new Error(`${nodeId} is still running`);
          current = await startAgentHostProcess(env);
          services.push(current);
        },
      };
      cleanups.push(async () => {
        await current?.stop();
      });
      nodes.push(node);
    }

    const devJwtSecret = randomBytes(24).toString("hex");
    const port = await freePort();
    const functions = await startFunctions(
      functionsEnv(shared, {
        port,
        metricsPort: 0,
        devJwtSecret,
        // One node's data plane; production puts a load balancer over all (docs/decisions/0019).
        dataPlaneUrl: nodes[0]?.dataPlaneUrl ?? "http://127.0.0.1:9",
        sweepIntervalMs,
      }),
    );
    services.push(functions);
    // Last started, first stopped by stopAll: no sweep runs while the nodes go.
    cleanups.push(() => functions.stop());
    const { process: _emulatorProcess, ...emulatorInfo } = emulator;
    return {
      functionsUrl: `http://127.0.0.1:${port}`,
      devJwtSecret,
      databaseUrl,
      dataRoot,
      emulator: emulatorInfo,
      nodes,
      nodeTtlSeconds,
      sweepIntervalMs,
      output: () => services.map((s) => `--- ${s.name} (pid ${s.pid})\n${s.output()}`).join("\n"),
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
