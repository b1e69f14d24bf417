import type { RunByteBudgets } from "./byte-meter.ts";
import type { EgressAudit, EgressProtocol } from "./egress-record.ts";
import type { EgressSandbox } from "./egress-sandbox.ts";

export type FlowDeps = {
  readonly sandbox: EgressSandbox;
  readonly audit: EgressAudit;
  readonly budgets: RunByteBudgets;
  /** The run's egress_bytes_per_run. */
  readonly bytesPerRun: number;
};

/**
 * One audited connection (a CONNECT tunnel, a SOCKS stream or one forwarded HTTP request):
 * counts its bytes against the run's budget and writes exactly one record when it ends.
 */
export type EgressFlow = {
  target(host: string, port: number, address: string | null): void;
  deny(reason: string): void;
  /** False once the run is past its budget: the caller cuts the connection. */
  count(direction: "up" | "down", bytes: number): boolean;
  cut(reason: string): void;
  finish(): void;
};

export function startFlow(deps: FlowDeps, protocol: EgressProtocol): EgressFlow {
  const startedAt = new Date();
  let host = "";
  let port = 0;
  let address: string | null = null;
  let decision: "allowed" | "denied" = "allowed";
  let reason: string | null = null;
  let up = 0;
  let down = 0;
  let done = false;
  const flow: EgressFlow = {
    target(h, p, a) {
      host = h;
      port = p;
      address = a;
    },
    deny(why) {
      decision = "denied";
      reason = why;
      flow.finish();
    },
    count(direction, bytes) {
      if (direction === "up") up += bytes;
      else down += bytes;
      return deps.budgets.add(deps.sandbox.runId, deps.bytesPerRun, bytes);
    },
    cut(why) {
      reason ??= why;
    },
    finish() {
      if (done) return;
      done = true;
      deps.audit({
        sandbox: deps.sandbox,
        host,
        port,
        address,
        protocol,
        decision,
        reason,
        bytesUp: up,
        bytesDown: down,
        durationMs: Date.now() - startedAt.getTime(),
        startedAt,
      });
    },
  };
  return flow;
}
