import { chmod, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { AddressGuard } from "./address-guard.ts";
import { createRunByteBudgets } from "./byte-meter.ts";
import { DEFAULT_EGRESS_LIMITS, type EgressLimits } from "./egress-limits.ts";
import type { EgressAudit } from "./egress-record.ts";
import type { CeilingSource, EgressSandbox } from "./egress-sandbox.ts";
import { openSandboxListener, type SandboxListener } from "./sandbox-listener.ts";

export type EgressProxyDeps = {
  /** A directory only the agent-host can enter (mode 0700); one socket per sandbox in it. */
  readonly socketDir: string;
  readonly ceiling: CeilingSource;
  readonly guard: AddressGuard;
  readonly audit: EgressAudit;
  /** A connection refused at accept (too many open for its sandbox). */
  readonly onDropped?: () => void;
  readonly limits?: Partial<EgressLimits>;
};

export type SandboxEgress = {
  /** The sandbox's socket on the host; bind it into the sandbox and nothing else. */
  readonly socketPath: string;
  close(): Promise<void>;
};

export type EgressProxy = {
  /**
   * Opens the listener of one sandbox generation. Called only for a run whose policy is
   * not `none`: a sandbox without network gets no socket at all.
   */
  open(sandbox: EgressSandbox, bytesPerRun: number): Promise<SandboxEgress>;
  close(): Promise<void>;
};

/** Socket names carry no tenant data: the sandbox id and generation are opaque ids. */
function socketName(sandbox: EgressSandbox): string {
  return `${sandbox.sandboxId.replace(/[^A-Za-z0-9-]/g, "_").slice(0, 60)}-${sandbox.generation}.sock`;
}

/** The node's egress proxy (ARCHITECTURE.md §13, docs/decisions/0116). */
export async function createEgressProxy(deps: EgressProxyDeps): Promise<EgressProxy> {
  const limits = { ...DEFAULT_EGRESS_LIMITS, ...deps.limits };
  await mkdir(deps.socketDir, { recursive: true, mode: 0o700 });
  await chmod(deps.socketDir, 0o700);
  const budgets = createRunByteBudgets();
  const open = new Map<string, { listener: SandboxListener; abort: AbortController }>();
  const closeOne = async (path: string) => {
    const entry = open.get(path);
    if (entry === undefined) return;
    open.delete(path);
    entry.abort.abort();
    await entry.listener.close();
    await rm(path, { force: true });
  };
  return {
    async open(sandbox, bytesPerRun) {
      const path = join(deps.socketDir, socketName(sandbox));
      await closeOne(path);
      await rm(path, { force: true });
      const abort = new AbortController();
      const listener = await openSandboxListener(
        path,
        {
          sandbox,
          audit: deps.audit,
          budgets,
          bytesPerRun,
          limits,
          signal: abort.signal,
          decision: {
            guard: deps.guard,
            resolveTimeoutMs: limits.resolveTimeoutMs,
            ceiling: (uid, signal) =>
              deps.ceiling(
                uid,
                AbortSignal.any([signal, AbortSignal.timeout(limits.policyTimeoutMs)]),
              ),
          },
        },
        { onDropped: deps.onDropped ?? (() => {}) },
      );
      // The sandbox's processes run as another uid: they must be able to connect.
      await chmod(path, 0o666);
      open.set(path, { listener, abort });
      return { socketPath: path, close: () => closeOne(path) };
    },
    async close() {
      await Promise.all([...open.keys()].map(closeOne));
    },
  };
}
