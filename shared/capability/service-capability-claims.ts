import { z } from "zod";
import { MAX_UID_CHARS } from "../contracts/common.ts";
import { MAX_SKILL_SLUG_CHARS } from "../contracts/skill.ts";
import {
  PER_USER_SERVICE_OPS,
  SERVICE_CAPABILITY_OPS,
  type ServiceCapabilityOp,
  SKILL_IMPORT_SERVICE_OPS,
} from "./service-capability-ops.ts";

/**
 * The JWS `typ` header of a service capability. Distinct from CAPABILITY_TOKEN_TYPE on
 * purpose: each verifier pins its own type, so a service capability can never be accepted
 * where a Workdir capability is expected (it names no Workdir), and a Workdir capability
 * handed to a browser can never call a service operation, whatever its claims say.
 */
export const SERVICE_CAPABILITY_TOKEN_TYPE = "wc-service-capability+jwt";
/** S3's own limit on object keys: nothing longer can name an upload. */
export const MAX_SERVICE_UPLOAD_KEY_CHARS = 1024;

const hasAny = (ops: readonly ServiceCapabilityOp[], among: readonly ServiceCapabilityOp[]) =>
  ops.some((op) => among.includes(op));

/**
 * The claims of a service capability. Like a Workdir capability, the uid is in `uid`, never
 * in `sub` (it is not an identity token). Each claim that scopes the capability is present
 * exactly when an op needs it: a per-user op without a uid would be a capability for every
 * user, and a scope claim no op reads would suggest a restriction that does not exist.
 */
export const serviceCapabilityClaimsSchema = z
  .object({
    uid: z
      .string()
      .min(1)
      .max(MAX_UID_CHARS)
      .optional()
      .describe(
        "The one user a per-user op (skills.refresh, skills.personal, workspace.usage) may act for.",
      ),
    skill_slug: z
      .string()
      .min(1)
      .max(MAX_SKILL_SLUG_CHARS)
      .optional()
      .describe("skills.import: the one shared skill the import may create or replace."),
    upload_key: z
      .string()
      .min(1)
      .max(MAX_SERVICE_UPLOAD_KEY_CHARS)
      .optional()
      .describe("skills.import: the one uploaded archive (object key) the import may read."),
    workdir_path: z
      .undefined()
      .optional()
      .describe("Never present: a service capability does not name, or open, a Workdir."),
    ops: z
      .array(z.enum(SERVICE_CAPABILITY_OPS))
      .min(1)
      .max(SERVICE_CAPABILITY_OPS.length)
      .refine((ops) => new Set(ops).size === ops.length, "must list each operation once")
      .describe("Service operations allowed; anything else is refused with 403."),
    aud: z.string().min(1).describe("The data plane the capability is meant for."),
    iss: z.string().min(1).describe("Who minted it (functions/)."),
    iat: z.number().int().nonnegative().describe("Issued at, seconds since the epoch."),
    exp: z.number().int().positive().describe("Expires at, seconds since the epoch."),
    jti: z.string().min(1).max(128).describe("Unique id of this capability, for logs and audits."),
  })
  .superRefine((claims, ctx) => {
    const perUser = hasAny(claims.ops, PER_USER_SERVICE_OPS);
    if (perUser !== (claims.uid !== undefined)) {
      ctx.addIssue({
        code: "custom",
        path: ["uid"],
        message: perUser
          ? "a per-user op needs the uid it acts for"
          : "uid is only for per-user ops (skills.refresh, skills.personal, workspace.usage)",
      });
    }
    const importing = hasAny(claims.ops, SKILL_IMPORT_SERVICE_OPS);
    for (const field of ["skill_slug", "upload_key"] as const) {
      if (importing !== (claims[field] !== undefined)) {
        ctx.addIssue({
          code: "custom",
          path: [field],
          message: importing
            ? `skills.import needs ${field}`
            : `${field} is only for skills.import`,
        });
      }
    }
  });

export type ServiceCapabilityClaims = z.output<typeof serviceCapabilityClaimsSchema>;
