import type { Interception } from "../secrets/interception.ts";
import type { SandboxSecrets } from "../secrets/sandbox-secrets.ts";
import type { AddressGuard } from "./address-guard.ts";
import { createRunByteBudgets } from "./byte-meter.ts";
import type { NetworkAsk } from "./egress-decision.ts";
import { DEFAULT_EGRESS_LIMITS, type EgressLimits } from "./egress-limits.ts";
import type { EgressAudit } from "./egress-record.ts";
import type { CeilingSource, EgressSandbox } from "./egress-sandbox.ts";
import { openSandboxListener, type SandboxListener } from "./sandbox-listener.ts";
import { placeSocket } from "./socket-placement.ts";

export type EgressProxyDeps = {
  readonly ceiling: CeilingSource;
  readonly guard: AddressGuard;
  readonly audit: EgressAudit;
  /** A connection refused at accept (too many open for its sandbox). */
  readonly onDropped?: () => void;
  readonly limits?: Partial<EgressLimits>;
  /** TLS termination towards hosts a secret binds (decision 0133); undefined: none. */
  readonly interception?: Interception;
};

/** What a sandbox with secrets gets on top of its socket (decision 0132). */
export type SandboxExtras = {
  readonly secrets?: SandboxSecrets;
  /** Files placed beside the socket (name → text), e.g. its CA bundle. */
  readonly files?: Readonly<Record<string, string>>;
  /** The run's network approvals: a host outside its narrowing asks (decision 0137). */
  readonly ask?: NetworkAsk;
};

export type SandboxEgress = {
  /** Where agent-host listens (a /proc/self/fd path: for agent-host and tests only). */
  readonly listenPath: string;
  /** The socket relative to the directory given to `open` (how the sandbox names it). */
  readonly relativePath: string;
  /** Each file of `extras.files` relative to the directory given to `open`. */
  readonly files: Readonly<Record<string, string>>;
  close(): Promise<void>;
};

export type EgressProxy = {
  /**
   * Opens a listener for one sandbox (a run in one generation) in a fresh directory
   * inside `dir` (socket-placement.ts). Called only for a run whose policy is not `none`:
   * a sandbox without network gets no socket at all.
   */
  open(
    sandbox: EgressSandbox,
    bytesPerRun: number,
    dir: string,
    notify?: EgressAudit,
    extras?: SandboxExtras,
  ): Promise<SandboxEgress>;
  close(): Promise<void>;
};

/** The node's egress proxy (docs/architecture.md §13, docs/decisions/0116). */
export function createEgressProxy(deps: EgressProxyDeps): EgressProxy {
  const limits = { ...DEFAULT_EGRESS_LIMITS, ...deps.limits };
  const budgets = createRunByteBudgets();
  const open = new Set<() => Promise<void>>();
  return {
    async open(sandbox, bytesPerRun, dir, notify, extras = {}) {
      const placement = await placeSocket(dir);
      const abort = new AbortController();
      let listener: SandboxListener;
      const files: Record<string, string> = {};
      try {
        for (const [name, text] of Object.entries(extras.files ?? {}))
          files[name] = await placement.addFile(name, text);
        listener = await openSandboxListener(
          placement.listenPath,
          {
            sandbox,
            // The node's audit, then the run's own (its network.request events).
            audit:
              notify === undefined
                ? deps.audit
                : (record) => {
                    deps.audit(record);
                    notify(record);
                  },
            budgets,
            bytesPerRun,
            limits,
            signal: abort.signal,
            ...(extras.secrets === undefined ? {} : { secrets: extras.secrets }),
            ...(deps.interception === undefined ? {} : { interception: deps.interception }),
            decision: {
              guard: deps.guard,
              resolveTimeoutMs: limits.resolveTimeoutMs,
              ...(extras.ask === undefined ? {} : { ask: extras.ask }),
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
        await placement.allowConnect();
      } catch (error) {
        abort.abort();
        await placement.remove();
        throw error;
      }
      let closing: Promise<void> | undefined;
      const close = () => {
        closing ??= (async () => {
          open.delete(close);
          abort.abort();
          await listener.close();
          await placement.remove();
        })();
        return closing;
      };
      open.add(close);
      return {
        listenPath: placement.listenPath,
        relativePath: placement.relativePath,
        files,
        close,
      };
    },
    async close() {
      await Promise.all([...open].map((close) => close()));
    },
  };
}
