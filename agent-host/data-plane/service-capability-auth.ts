import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { DEFAULT_CAPABILITY_AUDIENCE } from "../../shared/capability/capability-claims.ts";
import { capabilityTokenType } from "../../shared/capability/capability-token-type.ts";
import {
  SERVICE_CAPABILITY_TOKEN_TYPE,
  type ServiceCapabilityClaims,
} from "../../shared/capability/service-capability-claims.ts";
import {
  grantsServiceOp,
  type ServiceCapabilityOp,
} from "../../shared/capability/service-capability-ops.ts";
import {
  type VerifyCapabilityOptions,
  verifyCapability,
} from "../../shared/capability/verify-capability.ts";
import {
  type ServiceCapabilityVerification,
  verifyServiceCapability,
} from "../../shared/capability/verify-service-capability.ts";
import { invalidRequestFromZod } from "../../shared/contracts/contract-result.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import { bearerToken } from "../../shared/http/bearer-token.ts";
import type { DataPlaneDeps } from "./data-plane-deps.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";
import type { DataPlaneLimits } from "./data-plane-limits.ts";

/*
 * Service capabilities on the data plane (docs/decisions/0011, 0049): the control plane's
 * own calls that are not about one Workdir (skills, a user's workspace usage).
 */

/** What the service authentication needs: the keys and the clock tolerance. */
export type ServiceAuthDeps = Pick<DataPlaneDeps, "publicKeys" | "audience" | "issuer"> & {
  readonly limits: Pick<DataPlaneLimits, "clockToleranceSec">;
};

/** The env of service routes: a service capability instead of a Workdir one. */
export type ServiceRoutesEnv = {
  Variables: Omit<DataPlaneEnv["Variables"], "capability"> & {
    /** The verified service capability; set by authenticateService. */
    serviceCapability: ServiceCapabilityClaims;
  };
};

/**
 * For the Workdir routes (`/dp/v1/*`, the other `/internal/v1/*`), in front of their own
 * authentication: a genuine service capability is refused with 403, because it names no
 * Workdir and must never open one. (Without this guard the Workdir verifier would refuse it
 * too, by its `typ`, but as 401, telling an honest caller to fetch the same token again.)
 * Every other token goes on, untouched, to the Workdir authentication. The `typ` peek only
 * picks the verifier; the verifier pins the `typ` under the signature.
 */
export function refuseServiceCapability(
  deps: Pick<DataPlaneDeps, "publicKeys" | "audience" | "issuer">,
  clockToleranceSec: number,
): MiddlewareHandler<DataPlaneEnv> {
  return async function refuseServiceCapabilityMiddleware(c, next) {
    const token = bearerToken(c.req.header("Authorization"));
    if (token !== undefined && capabilityTokenType(token) === SERVICE_CAPABILITY_TOKEN_TYPE) {
      const result = await verifyServiceCapability(
        token,
        verifyOptions(deps, clockToleranceSec, c.req.raw.signal),
      );
      if (result.ok) {
        c.var.logger.info({ jti: result.claims.jti }, "service capability on a Workdir route");
        throw new WorkcellError(
          "forbidden",
          "A service capability cannot open a Workdir: use a capability from POST /v1/threads/{id}/files/access.",
          { details: { reason: "operation_not_granted" } },
        );
      }
    }
    await next();
  };
}

/**
 * Authenticates a service route (skills, usage): only a service capability opens it; a
 * valid Workdir capability (what browsers hold) is 403, anything else 401.
 */
export function authenticateService(deps: ServiceAuthDeps): MiddlewareHandler<ServiceRoutesEnv> {
  return async function authenticateServiceMiddleware(c, next) {
    const header = c.req.header("Authorization");
    const token = bearerToken(header);
    const options = verifyOptions(deps, deps.limits.clockToleranceSec, c.req.raw.signal);
    const result: ServiceCapabilityVerification =
      header === undefined
        ? { ok: false, reason: "missing" }
        : token === undefined
          ? { ok: false, reason: "malformed" }
          : await verifyServiceCapability(token, options);
    // `wrong_type` is only given for a correctly signed token: if it is a valid Workdir
    // capability, the caller is authenticated but not allowed (403), as for a missing op.
    if (
      !result.ok &&
      result.reason === "wrong_type" &&
      token !== undefined &&
      (await verifyCapability(token, options)).ok
    ) {
      c.var.logger.info({ reason: "workdir_capability" }, "capability refused");
      throw new WorkcellError(
        "forbidden",
        "A Workdir capability cannot call the service routes: functions/ mints a service capability for them.",
        { details: { reason: "operation_not_granted" } },
      );
    }
    if (!result.ok) {
      // The precise reason goes to the log only; `expired` alone is told (see capability-auth).
      c.var.logger.info({ reason: result.reason }, "capability refused");
      throw new WorkcellError(
        "unauthenticated",
        result.reason === "expired"
          ? "The service capability has expired: mint a new one for each call (and check the clocks of functions/ and this agent-host)."
          : "Missing or invalid service capability: send 'Authorization: Bearer <capability>' as minted by functions/ (mintServiceCapability).",
        result.reason === "expired" ? { details: { reason: "capability_expired" } } : {},
      );
    }
    c.set("serviceCapability", result.claims);
    c.set(
      "logger",
      c.var.logger.child({
        jti: result.claims.jti,
        ...(result.claims.uid === undefined ? {} : { uid: result.claims.uid }),
      }),
    );
    await next();
  };
}

function verifyOptions(
  deps: Pick<DataPlaneDeps, "publicKeys" | "audience" | "issuer">,
  clockToleranceSec: number,
  signal: AbortSignal,
): VerifyCapabilityOptions {
  return {
    publicKey: deps.publicKeys,
    audience: deps.audience ?? DEFAULT_CAPABILITY_AUDIENCE,
    ...(deps.issuer === undefined ? {} : { issuer: deps.issuer }),
    clockToleranceSec,
    signal,
  };
}

/** The verified service capability, after checking that it grants `op` (403 otherwise). */
export function requireServiceOp(
  c: Context<ServiceRoutesEnv>,
  op: ServiceCapabilityOp,
): ServiceCapabilityClaims {
  const claims = c.var.serviceCapability;
  if (!grantsServiceOp(claims.ops, op)) {
    throw new WorkcellError(
      "forbidden",
      `The capability does not allow '${op}': mint one that includes it.`,
      { details: { reason: "operation_not_granted", op } },
    );
  }
  return claims;
}

/** Exact comparison: a uid is an opaque string, and the capability's is the one decided. */
export function requireSameUid(asked: string, claims: ServiceCapabilityClaims): void {
  if (asked !== claims.uid) {
    throw new WorkcellError(
      "forbidden",
      "uid is not the user the capability was minted for: mint one for this user.",
      { details: { field: "uid", reason: "capability_scope" } },
    );
  }
}

/** The JSON body, validated by `schema` (400 with the shape expected otherwise). */
export async function readServiceBody<S extends z.ZodType>(
  c: Context<ServiceRoutesEnv>,
  schema: S,
  shape: string,
): Promise<z.output<S>> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch (err) {
    if (err instanceof WorkcellError) throw err; // the body limit
    throw new WorkcellError("invalid_request", `Send a JSON body: ${shape}.`, {
      details: { reason: "malformed_json" },
    });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw invalidRequestFromZod(parsed.error);
  return parsed.data;
}
