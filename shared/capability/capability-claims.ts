import { z } from "zod";
import { MAX_UID_CHARS } from "../contracts/common.ts";
import { normalizeWorkdirPath } from "../paths/normalize-workdir-path.ts";
import { CAPABILITY_OPS } from "./capability-ops.ts";

/** `iss` of capabilities minted by functions/. */
export const DEFAULT_CAPABILITY_ISSUER = "workcell-functions";
/** `aud` the data plane expects unless configured otherwise. */
export const DEFAULT_CAPABILITY_AUDIENCE = "workcell-data-plane";
/**
 * The JWS `typ` header of a capability. Verified, so no other JWT signed with the same kind
 * of key (an ID token, a future token type) can be replayed as a capability, and a
 * capability can never pass as something else that checks its own `typ`.
 */
export const CAPABILITY_TOKEN_TYPE = "wc-capability+jwt";
/** The only signature algorithm: Ed25519 (docs/architecture.md §1). */
export const CAPABILITY_ALGORITHM = "EdDSA";

/** The UserWorkspace quota a capability carries (docs/decisions/0017). */
export const workspaceQuotaSchema = z.object({
  workspace_bytes: z.number().int().nonnegative(),
  workspace_inodes: z.number().int().nonnegative(),
});
export type WorkspaceQuota = z.output<typeof workspaceQuotaSchema>;

/** True when `path` is already canonical: a capability names exactly one directory. */
function isCanonicalWorkdirPath(path: string): boolean {
  try {
    return normalizeWorkdirPath(path) === path;
  } catch {
    return false;
  }
}

/**
 * The claims of a data-plane capability. The uid travels in its own `uid` claim, not in
 * `sub`: a capability is not an identity token and must never be read as one by code that
 * takes `sub` as the caller.
 */
export const capabilityClaimsSchema = z.object({
  uid: z
    .string()
    .min(1)
    .max(MAX_UID_CHARS)
    .describe("The user whose UserWorkspace the capability opens (the OIDC `sub` of the user)."),
  workdir_path: z
    .string()
    .refine(isCanonicalWorkdirPath, "must be a canonical Workdir path (normalizeWorkdirPath)")
    .describe("The one Workdir the capability is scoped to, relative to the UserWorkspace."),
  ops: z
    .array(z.enum(CAPABILITY_OPS))
    .min(1)
    .max(CAPABILITY_OPS.length)
    .refine((ops) => new Set(ops).size === ops.length, "must list each operation once")
    .describe("Operations allowed on the Workdir; anything else is refused with 403."),
  aud: z.string().min(1).describe("The data plane the capability is meant for."),
  iss: z.string().min(1).describe("Who minted it (functions/)."),
  iat: z.number().int().nonnegative().describe("Issued at, seconds since the epoch."),
  exp: z.number().int().positive().describe("Expires at, seconds since the epoch."),
  jti: z.string().min(1).max(128).describe("Unique id of this capability, for logs and audits."),
  thread_id: z
    .uuid()
    .optional()
    .describe(
      "The thread the capability was handed out for (POST /v1/threads/{id}/files/access): the data plane refuses it once that thread is deleted (docs/decisions/0051). Absent on functions/' own short-lived internal capabilities.",
    ),
  quota: workspaceQuotaSchema
    .optional()
    .describe(
      "The uid's UserWorkspace quota, as functions/ read it when minting; absent: the data plane's defaults.",
    ),
});

export type CapabilityClaims = z.output<typeof capabilityClaimsSchema>;
