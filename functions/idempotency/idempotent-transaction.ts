import { and, eq } from "drizzle-orm";
import type { Db, DbTransaction } from "../../shared/db/client.ts";
import { type IdempotencyKey, idempotencyKeys } from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";

export type StoredResponse = { readonly status: number; readonly body: unknown };

export type IdempotencyScope = {
  readonly uid: string;
  readonly key: string;
  readonly method: string;
  readonly path: string;
  readonly requestHash: string;
};

/**
 * The stored response of a completed request with this key, checked against the new
 * request (409 when it differs), or undefined when the key is new. A cheap pre-check so a
 * retry is answered before any side check (the data plane) runs again.
 */
export async function storedResponse(
  db: Db,
  scope: IdempotencyScope | undefined,
): Promise<StoredResponse | undefined> {
  if (scope === undefined) return undefined;
  const [stored] = await db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.uid, scope.uid), eq(idempotencyKeys.key, scope.key)));
  return stored === undefined ? undefined : replay(stored, scope);
}

/**
 * Runs `create` in one transaction together with the Idempotency-Key record, so the key
 * and the effect commit or vanish together. A second request with the key waits on the
 * key's unique index until the first commits, then replays its stored response (same
 * method, path and body) or gets 409 (anything else).
 */
export async function runIdempotent(
  db: Db,
  scope: IdempotencyScope | undefined,
  create: (tx: DbTransaction) => Promise<StoredResponse>,
): Promise<StoredResponse> {
  if (scope === undefined) return db.transaction(create);
  return db.transaction(async (tx) => {
    const claimed = await tx
      .insert(idempotencyKeys)
      .values({
        uid: scope.uid,
        key: scope.key,
        method: scope.method,
        path: scope.path,
        requestHash: scope.requestHash,
      })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });
    if (claimed.length === 1) {
      const response = await create(tx);
      await tx
        .update(idempotencyKeys)
        .set({
          responseStatus: response.status,
          responseBody: response.body,
          completedAt: new Date(),
        })
        .where(and(eq(idempotencyKeys.uid, scope.uid), eq(idempotencyKeys.key, scope.key)));
      return response;
    }
    const [stored] = await tx
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.uid, scope.uid), eq(idempotencyKeys.key, scope.key)));
    if (stored === undefined) throw domainError("idempotency_key_reused");
    return replay(stored, scope);
  });
}

function replay(stored: IdempotencyKey, scope: IdempotencyScope): StoredResponse {
  if (
    stored.method !== scope.method ||
    stored.path !== scope.path ||
    stored.requestHash !== scope.requestHash
  ) {
    throw domainError("idempotency_key_reused");
  }
  if (stored.responseStatus === null) {
    // Unreachable while key and effect commit together; kept as a safe answer.
    throw new WorkcellError(
      "conflict",
      "A request with this Idempotency-Key is still in progress: retry shortly.",
    );
  }
  return { status: stored.responseStatus, body: stored.responseBody };
}
