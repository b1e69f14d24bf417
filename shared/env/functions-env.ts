import { z } from "zod";
import { networkDefaultAllowVar } from "../network/network-policy.ts";
import { secretsKeyVar } from "../secrets/secret-envelope.ts";
import { secretsKmsEnv } from "../secrets/secrets-kms-env.ts";
import {
  bucketNameVar,
  corsOriginsVar,
  ed25519PrivateJwkVar,
  httpUrlVar,
  logLevelVar,
  postgresUrlVar,
} from "./env-vars.ts";
import { nodeTtlEnv } from "./liveness-env.ts";

/** HS256 keys shorter than this are guessable; RFC 7518 asks for at least the hash size. */
export const MIN_DEV_JWT_SECRET_CHARS = 32;

export const AUTH_MODES = ["oidc", "dev"] as const;

const OIDC_VARIABLES = ["OIDC_ISSUER", "OIDC_AUDIENCE", "OIDC_JWKS_URL"] as const;

const functionsEnvObject = z.object({
  DATABASE_URL: postgresUrlVar().describe(
    "Postgres connection URL, e.g. postgres://user:pass@host:5432/workcell.",
  ),
  AWS_REGION: z
    .string()
    .min(1)
    .optional()
    .describe("AWS region of the queue and bucket, e.g. eu-west-1; Lambda sets it for you."),
  AWS_ENDPOINT_URL: httpUrlVar()
    .optional()
    .describe("Endpoint override for S3/SQS emulators (fauxqs, LocalStack); leave unset on AWS."),
  RUN_QUEUE_URL: httpUrlVar().describe(
    "URL of the SQS queue for run dispatch and maintenance messages.",
  ),
  ATTACHMENTS_BUCKET: bucketNameVar().describe("S3 bucket that receives attachment uploads."),
  AUTH_MODE: z
    .enum(AUTH_MODES)
    .default("oidc")
    .describe(
      "`oidc` verifies tokens against OIDC_JWKS_URL (default); `dev` accepts HS256 tokens signed with DEV_JWT_SECRET, for local use only.",
    ),
  OIDC_ISSUER: httpUrlVar()
    .optional()
    .describe(
      "Expected `iss` of tokens, e.g. https://login.example.com/; required when AUTH_MODE=oidc.",
    ),
  OIDC_AUDIENCE: z
    .string()
    .min(1)
    .optional()
    .describe("Expected `aud` of tokens (the API's client id); required when AUTH_MODE=oidc."),
  OIDC_JWKS_URL: httpUrlVar()
    .optional()
    .describe("URL of the issuer's JSON Web Key Set; required when AUTH_MODE=oidc."),
  DEV_JWT_SECRET: z
    .string()
    .min(MIN_DEV_JWT_SECRET_CHARS, `must be at least ${MIN_DEV_JWT_SECRET_CHARS} characters`)
    .optional()
    .describe(
      `HS256 secret of dev tokens, at least ${MIN_DEV_JWT_SECRET_CHARS} characters; required when AUTH_MODE=dev.`,
    ),
  ADMIN_CLAIM: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Name of a boolean token claim that marks admins (e.g. workcell_admin); unset means no one is admin.",
    ),
  CAPABILITY_PRIVATE_KEY: ed25519PrivateJwkVar().describe(
    'Ed25519 private key as JWK JSON ({"kty":"OKP","crv":"Ed25519","x":…,"d":…}) used to sign data-plane capabilities.',
  ),
  DATA_PLANE_URL: httpUrlVar().describe(
    "Public base URL of the agent-host data plane, as browsers reach it.",
  ),
  DATA_PLANE_ROUTING: z
    .enum(["fixed", "nodes"])
    .default("fixed")
    .describe(
      "`fixed` (default): clients get DATA_PLANE_URL (one node, or a load balancer in front of every node's data plane). `nodes`: a live node's own data_plane_url, the thread's sandbox node first, DATA_PLANE_URL only when no node is live, so a lost node does not break file access.",
    ),
  WORKCELL_CORS_ORIGINS: corsOriginsVar()
    .optional()
    .describe(
      "Browser origins allowed to call the API (CORS), comma-separated, e.g. https://console.example.com,http://localhost:5173; `*` for any; unset: none.",
    ),
  WORKCELL_NETWORK_DEFAULT_ALLOW: networkDefaultAllowVar(),
  WORKCELL_SECRETS_KEY: secretsKeyVar(),
  ...secretsKmsEnv,
  ...nodeTtlEnv,
  LOG_LEVEL: logLevelVar().describe(
    "Log level: fatal, error, warn, info (default), debug, trace or silent.",
  ),
});

type FunctionsEnvBase = z.output<typeof functionsEnvObject>;

export type FunctionsEnv =
  | (FunctionsEnvBase & {
      AUTH_MODE: "oidc";
      OIDC_ISSUER: string;
      OIDC_AUDIENCE: string;
      OIDC_JWKS_URL: string;
    })
  | (FunctionsEnvBase & { AUTH_MODE: "dev"; DEV_JWT_SECRET: string });

/**
 * Environment of functions/ (Lambda, Workers, Node). The OIDC variables are required
 * only in `oidc` mode and DEV_JWT_SECRET only in `dev` mode; the output type narrows on
 * AUTH_MODE so handlers never see a missing issuer.
 */
export const functionsEnvSchema = functionsEnvObject
  .superRefine(
    (env, ctx) => {
      if (env.AUTH_MODE === "oidc") {
        for (const variable of OIDC_VARIABLES) {
          if (env[variable] === undefined) {
            ctx.addIssue({
              code: "custom",
              path: [variable],
              message: "is required when AUTH_MODE=oidc",
            });
          }
        }
      } else if (env.AUTH_MODE === "dev" && env.DEV_JWT_SECRET === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["DEV_JWT_SECRET"],
          message: "is required when AUTH_MODE=dev",
        });
      }
    },
    // Run even when other variables are already bad, so one start-up lists every problem.
    { when: (payload) => typeof payload.value === "object" && payload.value !== null },
  )
  .transform((env, ctx): FunctionsEnv => {
    const { OIDC_ISSUER, OIDC_AUDIENCE, OIDC_JWKS_URL, DEV_JWT_SECRET } = env;
    if (env.AUTH_MODE === "dev" && DEV_JWT_SECRET !== undefined) {
      return { ...env, AUTH_MODE: "dev", DEV_JWT_SECRET };
    }
    if (
      env.AUTH_MODE === "oidc" &&
      OIDC_ISSUER !== undefined &&
      OIDC_AUDIENCE !== undefined &&
      OIDC_JWKS_URL !== undefined
    ) {
      return { ...env, AUTH_MODE: "oidc", OIDC_ISSUER, OIDC_AUDIENCE, OIDC_JWKS_URL };
    }
    // Unreachable after the refinement above; kept so the narrowing needs no cast.
    ctx.addIssue({
      code: "custom",
      path: ["AUTH_MODE"],
      message: "authentication settings are incomplete",
    });
    return z.NEVER;
  });
