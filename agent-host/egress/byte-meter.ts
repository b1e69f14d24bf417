/**
 * Bytes of one run through the proxy, across its connections, against its
 * `egress_bytes_per_run`: `add` answers false once the run is past it, and the caller cuts
 * the connection. Owned by the proxy (one map per proxy, not module state).
 */
export type RunByteBudgets = {
  add(runId: string, limit: number, bytes: number): boolean;
  used(runId: string): number;
  forget(runId: string): void;
};

export function createRunByteBudgets(): RunByteBudgets {
  const used = new Map<string, number>();
  return {
    add(runId, limit, bytes) {
      const total = (used.get(runId) ?? 0) + bytes;
      used.set(runId, total);
      return total <= limit;
    },
    used: (runId) => used.get(runId) ?? 0,
    forget: (runId) => void used.delete(runId),
  };
}
