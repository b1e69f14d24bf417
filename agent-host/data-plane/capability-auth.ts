import type { Context, MiddlewareHandler } from "hono";
import {
  type CapabilityClaims,
  DEFAULT_CAPABILITY_AUDIENCE,
} from "../../shared/capability/capability-claims.ts";
import { type CapabilityOp, grantsOp } from "../../shared/capability/capability-ops.ts";
import {
  type CapabilityVerification,
  verifyCapability,
} from "../../shared/capability/verify-capability.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import { bearerToken } from "../../shared/http/bearer-token.ts";
import type { DataPlaneDeps } from "./data-plane-deps.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";
import type { ThreadRevocations } from "./thread-revocations.ts";

/**
 * Verifies the `Authorization: Bearer <capability>` of every request before anything else
 * happens (no body is read, no file is touched for a refused request). The capability is
 * the only authorization the data plane knows (docs/architecture.md §1): functions/ decided from
 * Postgres, the agent-host checks the signature. Its uid and workdir_path select the
 * Workdir; nothing in the request can point elsewhere.
 *
 * Refusals are 401 with one generic message; the precise reason goes to the log only, so a
 * forger learns nothing. The one exception is `expired`, which an honest client needs to
 * know to fetch a fresh capability, and which says nothing about the key.
 */
export function requireCapability(
  deps: Pick<DataPlaneDeps, "publicKeys" | "audience" | "issuer" | "revocations">,
  clockToleranceSec: number,
): MiddlewareHandler<DataPlaneEnv> {
  return async function requireCapabilityMiddleware(c, next) {
    const header = c.req.header("Authorization");
    const token = bearerToken(header);
    const result: CapabilityVerification =
      header === undefined
        ? { ok: false, reason: "missing" }
        : token === undefined
          ? { ok: false, reason: "malformed" }
          : await verifyCapability(token, {
              publicKey: deps.publicKeys,
              audience: deps.audience ?? DEFAULT_CAPABILITY_AUDIENCE,
              ...(deps.issuer === undefined ? {} : { issuer: deps.issuer }),
              clockToleranceSec,
              signal: c.req.raw.signal,
            });
    if (!result.ok) {
      c.var.logger.info({ reason: result.reason }, "capability refused");
      throw new WorkcellError(
        "unauthenticated",
        result.reason === "expired"
          ? "The capability has expired: ask the API for a new one (POST /v1/threads/{id}/files/access)."
          : "Missing or invalid capability: send 'Authorization: Bearer <capability>' as returned by POST /v1/threads/{id}/files/access.",
        result.reason === "expired" ? { details: { reason: "capability_expired" } } : {},
      );
    }
    const claims = result.claims;
    if (claims.thread_id !== undefined && deps.revocations !== undefined) {
      await refuseRevoked(deps.revocations, claims.uid, claims.thread_id, c);
    }
    c.set("capability", claims);
    // The uid is logged (it is the OIDC subject, not a secret); the token never is.
    c.set("logger", c.var.logger.child({ uid: claims.uid, jti: claims.jti }));
    await next();
  };
}

/**
 * A capability handed out for a thread dies with the thread (docs/decisions/0051). Like
 * `expired`, the reason is told: it says nothing about the key, and an honest client needs
 * to know that asking again will not help. Postgres not answering is a 503 (fail closed).
 */
async function refuseRevoked(
  revocations: ThreadRevocations,
  uid: string,
  threadId: string,
  c: Context<DataPlaneEnv>,
): Promise<void> {
  let revoked: boolean;
  try {
    revoked = await revocations.isRevoked(uid, threadId, c.req.raw.signal);
  } catch (error) {
    c.var.logger.warn({ err: error, thread_id: threadId }, "capability revocation check failed");
    throw new WorkcellError(
      "unavailable",
      "The data plane could not check whether the capability's thread still exists: retry shortly.",
    );
  }
  if (!revoked) return;
  c.var.logger.info({ reason: "revoked", thread_id: threadId }, "capability refused");
  throw new WorkcellError(
    "unauthenticated",
    "The thread this capability was issued for has been deleted: its capabilities no longer work.",
    { details: { reason: "capability_revoked" } },
  );
}

/** The verified capability, after checking that it grants `op` (403 otherwise). */
export function requireOp(c: Context<DataPlaneEnv>, op: CapabilityOp): CapabilityClaims {
  const claims = c.var.capability;
  if (!grantsOp(claims.ops, op)) {
    throw new WorkcellError(
      "forbidden",
      `The capability does not allow '${op}': ask the API for one that includes it.`,
      { details: { reason: "operation_not_granted", op } },
    );
  }
  return claims;
}
