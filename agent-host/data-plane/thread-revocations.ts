import { and, eq } from "drizzle-orm";
import { abortable } from "../../shared/async/abortable.ts";
import type { Db } from "../../shared/db/client.ts";
import { conversations } from "../../shared/db/schema.ts";

/**
 * The revocation point of client capabilities (docs/decisions/0051): a capability that
 * names a thread stops working once that thread is deleted. The data plane asks this on
 * every request whose capability carries `thread_id`.
 */
export interface ThreadRevocations {
  /** True when the thread is deleted (or unknown); rejects when Postgres cannot say. */
  isRevoked(uid: string, threadId: string, signal: AbortSignal): Promise<boolean>;
}

/** How long an "active" answer is reused: the bound on how late a deletion is noticed. */
export const DEFAULT_ACTIVE_THREAD_TTL_MS = 2_000;
/** Threads remembered per node (a deleted one stays deleted, so it is kept until evicted). */
export const DEFAULT_MAX_REMEMBERED_THREADS = 10_000;
/** One primary-key lookup; a Postgres slower than this fails the request with 503. */
export const DEFAULT_REVOCATION_QUERY_TIMEOUT_MS = 2_000;

export type ThreadRevocationsOptions = {
  readonly db: Db;
  /** Default DEFAULT_ACTIVE_THREAD_TTL_MS; 0 asks Postgres on every request. */
  readonly activeTtlMs?: number;
  readonly maxThreads?: number;
  readonly queryTimeoutMs?: number;
  /** The clock, milliseconds (tests); default Date.now. */
  readonly now?: () => number;
};

type Entry = { readonly answer: Promise<boolean>; readonly at: number };

/**
 * Thread status from Postgres behind a small per-node cache. A deleted thread never comes
 * back (deletion is a one-way status change), so "revoked" is cached until evicted;
 * "active" only for `activeTtlMs`, which is therefore how long a capability can outlive
 * its thread on this node. Concurrent requests for one thread share one query. A failed
 * query is not cached, and the caller refuses the request (fail closed).
 */
export function createThreadRevocations(options: ThreadRevocationsOptions): ThreadRevocations {
  const activeTtlMs = options.activeTtlMs ?? DEFAULT_ACTIVE_THREAD_TTL_MS;
  const maxThreads = options.maxThreads ?? DEFAULT_MAX_REMEMBERED_THREADS;
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULT_REVOCATION_QUERY_TIMEOUT_MS;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();

  async function lookUp(uid: string, threadId: string, signal: AbortSignal): Promise<boolean> {
    const [row] = await abortable(
      options.db
        .select({ status: conversations.status })
        .from(conversations)
        .where(and(eq(conversations.threadId, threadId), eq(conversations.uid, uid))),
      AbortSignal.any([signal, AbortSignal.timeout(queryTimeoutMs)]),
      "the thread status lookup",
    );
    return row?.status !== "active";
  }

  function remember(key: string, entry: Entry): void {
    entries.delete(key);
    // Map order is insertion order: the first key is the longest unrefreshed one.
    if (entries.size >= maxThreads) {
      const oldest = entries.keys().next().value;
      if (oldest !== undefined) entries.delete(oldest);
    }
    entries.set(key, entry);
  }

  return {
    async isRevoked(uid, threadId, signal) {
      const key = `${uid}\u0000${threadId}`;
      const cached = entries.get(key);
      if (cached !== undefined) {
        const settled = await cached.answer.then(
          (revoked) => revoked,
          () => undefined,
        );
        if (settled === true) return true;
        if (settled === false && now() - cached.at <= activeTtlMs && activeTtlMs > 0) return false;
      }
      const entry: Entry = { answer: lookUp(uid, threadId, signal), at: now() };
      remember(key, entry);
      try {
        return await entry.answer;
      } catch (error) {
        if (entries.get(key) === entry) entries.delete(key);
        throw error;
      }
    },
  };
}
