import { z } from "zod";
import { type CorsOrigins, parseCorsOrigins } from "../http/cors-for-origins.ts";

// Building blocks shared by the per-deployable env schemas. Env values are strings, so
// numbers are parsed from digits only ("1e3", "0x10" and " 8 " are refused rather than
// guessed at), and JSON keys are parsed here so a bad key fails at start-up, not at
// the first request that needs it.

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export const DEFAULT_LOG_LEVEL = "info";

export function logLevelVar() {
  return z.enum(LOG_LEVELS).default(DEFAULT_LOG_LEVEL);
}

export function httpUrlVar() {
  return z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" });
}

export function postgresUrlVar() {
  return z.url({
    protocol: /^postgres(ql)?$/,
    error: "must be a postgres:// or postgresql:// URL, e.g. postgres://user:pass@host:5432/db",
  });
}

export function intVar(min: number, max: number) {
  return z
    .string()
    .regex(/^\d+$/, "must be a whole number written with digits only")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

export function decimalVar(min: number, max: number) {
  return z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number like 2 or 0.5")
    .transform(Number)
    .pipe(z.number().min(min).max(max));
}

/** Highest TCP port number. */
export const MAX_TCP_PORT = 65_535;

export function portVar() {
  return intVar(1, MAX_TCP_PORT);
}

/** S3 bucket naming rules (lowercase, digits, dots, hyphens; 3 to 63 characters). */
export function bucketNameVar() {
  return z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
      "must be an S3 bucket name: 3 to 63 lowercase letters, digits, '.' or '-'",
    );
}

/** `/…`, no NUL: a host path the deployable resolves once at start-up. */
export function absolutePathVar() {
  return z.string().regex(/^\/[^\0]*$/, "must be an absolute path (starting with '/')");
}

const ed25519PublicJwk = z.looseObject({
  kty: z.literal("OKP"),
  crv: z.literal("Ed25519"),
  x: z.string().min(1),
  kid: z.string().optional(),
});

const ed25519PrivateJwk = ed25519PublicJwk.extend({ d: z.string().min(1) });

export type Ed25519PublicJwk = z.output<typeof ed25519PublicJwk>;
export type Ed25519PrivateJwk = z.output<typeof ed25519PrivateJwk>;

// The value is a secret: the parse error says "not JSON" and nothing else, because
// JSON.parse's own message quotes the input.
function jsonText() {
  return z.string().transform((text, ctx): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      ctx.addIssue({ code: "custom", message: "must be a JSON object (a JWK)" });
      return z.NEVER;
    }
  });
}

export function ed25519PrivateJwkVar() {
  return jsonText().pipe(ed25519PrivateJwk);
}

export function ed25519PublicJwkVar() {
  // A private key where a public one belongs would spread the signing key to every
  // agent-host: refuse it rather than silently using its public half.
  return jsonText().pipe(
    ed25519PublicJwk.refine((jwk) => !Object.hasOwn(jwk, "d"), {
      message: "is a private key: remove the 'd' member and set only the public key",
    }),
  );
}

/** A comma-separated list of browser origins (or `*`), parsed by parseCorsOrigins. */
export function corsOriginsVar() {
  return z.string().transform((text, ctx): CorsOrigins => {
    const parsed = parseCorsOrigins(text);
    if (parsed.ok) return parsed.origins;
    ctx.addIssue({ code: "custom", message: parsed.message });
    return z.NEVER;
  });
}
