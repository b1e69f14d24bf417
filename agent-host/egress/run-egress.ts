import { stat } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import type { Logger } from "pino";
import { abortable } from "../../shared/async/abortable.ts";
import type { AgentOptions } from "../../shared/contracts/run.ts";
import type { Db } from "../../shared/db/client.ts";
import { retryDatabaseWhile } from "../../shared/db/retry-database-while.ts";
import { userLimits } from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import type { NetworkPolicy } from "../../shared/network/network-policy.ts";
import { findNetworkCeiling } from "../../shared/network/network-policy-store.ts";
import { DEFAULT_RUN_WORKER_LIMITS, databaseRetryOf } from "../runs/run-limits.ts";
import { containerName } from "../sandbox/instance/container-labels.ts";
import type { SandboxHandle } from "../sandbox/sandbox-handle.ts";
import { createSandboxSecrets, type SecretSource } from "../secrets/sandbox-secrets.ts";
import { CA_BUNDLE_FILE, secretsEnv } from "../secrets/secrets-env.ts";
import { CONTAINER_EGRESS_MOUNT, containerEgressDir } from "./container-egress-dir.ts";
import type { NetworkAsk } from "./egress-decision.ts";
import type { EgressProxy } from "./egress-proxy.ts";
import type { EgressAudit, EgressRecord } from "./egress-record.ts";
import { EGRESS_PRELUDE, egressEnv } from "./sandbox-egress-env.ts";

/** What a run's execs get when the run has network: variables, and the relay's prelude. */
export type RunEgress = {
  readonly env: Readonly<Record<string, string>>;
  readonly prelude: string;
  /** The patterns it may reach (its narrowing, else its user's ceiling), for its prompt. */
  readonly hosts: readonly string[];
  /** True: a host outside `hosts` (inside the user's ceiling) asks a person (decision 0137). */
  readonly asks: boolean;
  /** The user's secrets this run holds placeholders of (names and hosts, for its prompt). */
  readonly secrets: readonly { readonly name: string; readonly hosts: readonly string[] }[];
  close(): Promise<void>;
};

export type RunEgressRequest = {
  readonly uid: string;
  readonly runId: string;
  readonly agent: AgentOptions;
  readonly handle: SandboxHandle;
  /** Each connection as it ends (the run's `network.request` events); must not throw. */
  readonly notify?: EgressAudit;
  /**
   * The run's network approvals (agent-host/approvals/network-approvals.ts, decision 0137):
   * a host its narrowing leaves out asks a person instead of being refused.
   */
  readonly ask?: NetworkAsk;
};

/** Opens a run's egress, or answers undefined: the run has no network (no socket, no variable). */
export type OpenRunEgress = (
  request: RunEgressRequest,
  signal: AbortSignal,
) => Promise<RunEgress | undefined>;

export type RunEgressDeps = {
  readonly db: Db;
  readonly logger: Logger;
  readonly networkDefault: NetworkPolicy;
  /** The node's proxy; undefined when it could not start (runs that ask for network fail). */
  readonly proxy: EgressProxy | undefined;
  /** The process tier's state directory (`<state>/<instanceId>/tmp` is a generation's /tmp). */
  readonly processStateDir: string | undefined;
  /** The container tier's egress root (DockerDriverDeps.egressRoot). */
  readonly containerEgressRoot: string | undefined;
  /** egress_bytes_per_run of a user without an admin's override (DEFAULT_USER_LIMITS). */
  readonly bytesPerRun: number;
  readonly policyTimeoutMs: number;
  /** Secrets brokering (decisions 0132, 0133); undefined: runs get no placeholders. */
  readonly secrets?: { readonly source: SecretSource; readonly caBundle: string };
};

/**
 * A run's network (docs/architecture.md §13, decision 0117): none unless its user's ceiling
 * opens something. Then the proxy gets a listener for exactly this run in this generation,
 * placed where the sandbox sees it (placementOf). A run that *asked* for network
 * (`agent.network`) where it cannot be given fails with `network_unavailable`; a run that
 * did not ask runs without, never with an open network.
 */
const POLICY_READ_RETRY = databaseRetryOf(DEFAULT_RUN_WORKER_LIMITS);

export function createRunEgressOpener(deps: RunEgressDeps): OpenRunEgress {
  return async ({ uid, runId, agent, handle, notify, ask }, signal) => {
    // Pure reads, tried again while the database does not answer (decision 0147): a
    // restart must not fail a run nothing of which has run yet.
    const [ceiling, bytesPerRun] = await retryDatabaseWhile(
      POLICY_READ_RETRY,
      "network policy read",
      deps.logger,
      signal,
      (attempt) =>
        abortable(
          Promise.all([
            findNetworkCeiling(deps.db, uid, deps.networkDefault),
            egressBytesPerRunOf(deps.db, uid, deps.bytesPerRun),
          ]),
          AbortSignal.any([attempt, AbortSignal.timeout(deps.policyTimeoutMs)]),
          "network policy read",
        ),
    );
    if (ceiling.mode === "none") return undefined;
    const asked = agent.network !== undefined;
    const place = await placementOf(deps, handle);
    if (deps.proxy === undefined || place === undefined) {
      const why =
        deps.proxy === undefined
          ? "the node's egress proxy is not running"
          : "its sandbox was created without the egress directory (start a new conversation)";
      if (asked)
        throw domainError("network_unavailable", { message: `No network for this run: ${why}.` });
      deps.logger.info({ run_id: runId, reason: why }, "run has no network");
      return undefined;
    }
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(deps.policyTimeoutMs)]);
    const live = deps.secrets === undefined ? [] : await deps.secrets.source(uid, bounded);
    const secrets =
      deps.secrets === undefined || live.length === 0
        ? undefined
        : createSandboxSecrets(
            uid,
            live.map((secret) => secret.name),
            deps.secrets.source,
          );
    const egress = await deps.proxy.open(
      {
        uid,
        runId,
        sandboxId: handle.sandboxId,
        generation: handle.generation,
        ...(agent.network === undefined ? {} : { runAllow: agent.network.allow }),
      },
      bytesPerRun,
      place.hostDir,
      notify,
      {
        ...(secrets === undefined
          ? {}
          : { secrets, files: { [CA_BUNDLE_FILE]: deps.secrets?.caBundle ?? "" } }),
        ...(ask === undefined ? {} : { ask }),
      },
    );
    const bundle = egress.files[CA_BUNDLE_FILE];
    return {
      // The proxy's variables last: no secret can stand in for them (names are also refused).
      env: {
        ...(secrets === undefined
          ? {}
          : secretsEnv(
              secrets,
              bundle === undefined ? undefined : `${place.sandboxDir}/${bundle}`,
            )),
        ...egressEnv(`${place.sandboxDir}/${egress.relativePath}`),
      },
      secrets: live.map((secret) => ({ name: secret.name, hosts: secret.hosts })),
      prelude: EGRESS_PRELUDE,
      hosts: agent.network?.allow ?? ceiling.allow,
      // Only a narrowed run has hosts that ask: without one its hosts are the ceiling.
      asks: ask !== undefined && agent.network !== undefined,
      close: egress.close,
    };
  };
}

/** The user's egress_bytes_per_run: an admin's override (user_limits), else the default. */
export async function egressBytesPerRunOf(db: Db, uid: string, fallback: number): Promise<number> {
  const [row] = await db
    .select({ bytes: userLimits.egressBytesPerRun })
    .from(userLimits)
    .where(eq(userLimits.uid, uid));
  return row?.bytes ?? fallback;
}

/**
 * Where a generation's socket goes: the host side of its /tmp (process tier), or its
 * egress directory bound at CONTAINER_EGRESS_MOUNT (container tier; a container created
 * before egress existed has none). Undefined: this sandbox cannot be given network.
 */
async function placementOf(
  deps: RunEgressDeps,
  handle: SandboxHandle,
): Promise<{ hostDir: string; sandboxDir: string } | undefined> {
  if (handle.tier === "process") {
    if (deps.processStateDir === undefined) return undefined;
    return { hostDir: join(deps.processStateDir, handle.instanceId, "tmp"), sandboxDir: "/tmp" };
  }
  if (deps.containerEgressRoot === undefined) return undefined;
  const hostDir = containerEgressDir(
    deps.containerEgressRoot,
    containerName(handle.sandboxId, handle.generation),
  );
  const found = await stat(hostDir).catch(() => undefined);
  return found?.isDirectory() === true
    ? { hostDir, sandboxDir: CONTAINER_EGRESS_MOUNT }
    : undefined;
}

/** A connection as its run's `network.request` event data (docs/api.md, NetworkRequest). */
export function networkRequestEventData(record: EgressRecord) {
  return {
    host: record.host,
    port: record.port,
    address: record.address,
    protocol: record.protocol,
    decision: record.decision,
    reason: record.reason,
    bytes_up: record.bytesUp,
    bytes_down: record.bytesDown,
    duration_ms: record.durationMs,
    started_at: record.startedAt.toISOString(),
  };
}
