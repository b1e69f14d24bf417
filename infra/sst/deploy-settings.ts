import { z } from "zod";
import { httpUrlVar, intVar } from "../../shared/env/env-vars.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";

// What `sst deploy` needs from the operator's environment, validated when sst.config.ts
// runs: a missing OIDC issuer or data-plane URL fails the deploy with every problem named,
// instead of deploying functions whose every cold start fails (the old `?? ""` fallbacks).

const httpsUrl = () =>
  z.url({ protocol: /^https$/, error: "must be an https:// URL (browsers reach it)" });

/** Bounds of the node group (settings below); the drainer's Lambda lives at most 15 minutes. */
export const MAX_NODE_COUNT = 100;
export const MAX_NODE_DRAIN_MINUTES = 14;
export const DEFAULT_NODE_COUNT = 2;
export const DEFAULT_NODE_DRAIN_MINUTES = 10;
export const DEFAULT_NODE_INSTANCE_TYPE = "m7i.large";
export const DEFAULT_NODE_VOLUME_GB = 100;

const deploySettingsShape = z.object({
  WORKCELL_OIDC_ISSUER: httpUrlVar().describe(
    "Issuer (`iss`) of your identity provider's tokens, e.g. https://login.example.com/.",
  ),
  WORKCELL_OIDC_AUDIENCE: z
    .string()
    .min(1)
    .describe("Expected `aud` of tokens: the client id the API is registered under."),
  WORKCELL_OIDC_JWKS_URL: httpUrlVar().describe(
    "The issuer's JSON Web Key Set URL, e.g. https://login.example.com/.well-known/jwks.json.",
  ),
  WORKCELL_OIDC_CLIENT_ID: z
    .string()
    .min(1)
    .optional()
    .describe("Client id the console signs in with (default: WORKCELL_OIDC_AUDIENCE)."),
  WORKCELL_DATA_PLANE_URL: httpsUrl().describe(
    "Public base URL of the agent-host data plane (a load balancer in front of the nodes), e.g. https://dp.workcell.example.com.",
  ),
  WORKCELL_ADMIN_CLAIM: z
    .string()
    .min(1)
    .optional()
    .describe("Boolean token claim that marks admins, e.g. workcell_admin (unset: no admins)."),
  WORKCELL_CONSOLE_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+\.[a-z]{2,}$/, "must be a bare host name like console.example.com")
    .optional()
    .describe("Custom domain of the console (unset: its CloudFront URL)."),
  WORKCELL_EXTRA_CORS_ORIGINS: z
    .string()
    .regex(
      /^https?:\/\/[^,\s/]+(,https?:\/\/[^,\s/]+)*$/,
      "must be a comma-separated list of origins like https://a.example.com",
    )
    .optional()
    .describe("More browser origins allowed besides the console (comma-separated)."),
  WORKCELL_ALARM_EMAIL: z
    .email()
    .optional()
    .describe("Where the dead-letter-queue alarm is mailed (unset: the SNS topic only)."),
  WORKCELL_MODEL_BASE_URL: httpUrlVar()
    .optional()
    .describe(
      "The nodes' OpenAI-compatible Chat Completions server up to the API version, e.g. https://api.openai.com/v1 (unset: the `shell` model, no LLM).",
    ),
  WORKCELL_MODEL_NAME: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("Model id sent to WORKCELL_MODEL_BASE_URL, e.g. gpt-4o-mini; required with it."),
  WORKCELL_MODEL_API_KEY: z
    .enum(["secret", "none"])
    .default("none")
    .describe(
      "`secret`: the nodes send the bearer token stored with `sst secret set ModelApiKey <key>`; `none` (default): no token.",
    ),
  WORKCELL_DATA_PLANE_CERTIFICATE_ARN: z
    .string()
    .regex(
      /^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[0-9a-f-]{36}$/,
      "must be an ACM certificate ARN like arn:aws:acm:eu-west-1:123456789012:certificate/<uuid>",
    )
    .describe(
      "ACM certificate of the data-plane load balancer (same region as the deploy), valid for the host of WORKCELL_DATA_PLANE_URL.",
    ),
  WORKCELL_DATA_PLANE_HOSTED_ZONE_ID: z
    .string()
    .regex(/^Z[A-Z0-9]{1,32}$/, "must be a Route 53 hosted zone id like Z0123456789ABCDEFGHIJ")
    .optional()
    .describe(
      "Route 53 hosted zone of the data plane's host name: the deploy then points that name at the load balancer (unset: point it yourself at the dataPlaneLoadBalancer output).",
    ),
  WORKCELL_DATA_PLANE_SCHEME: z
    .enum(["internet-facing", "internal"])
    .default("internet-facing")
    .describe(
      "internet-facing (public subnets; browsers reach the files API) or internal (private subnets; only clients inside the VPC). Default internet-facing.",
    ),
  WORKCELL_NODE_INSTANCE_TYPE: z
    .string()
    .regex(/^[a-z][a-z0-9-]*\.[a-z0-9]+$/, "must be an EC2 instance type like m7i.large")
    .default(DEFAULT_NODE_INSTANCE_TYPE)
    .describe(
      `EC2 instance type of the agent-host nodes (Graviton types such as m7g.large get the arm64 image). Default ${DEFAULT_NODE_INSTANCE_TYPE}.`,
    ),
  WORKCELL_NODE_COUNT: intVar(1, MAX_NODE_COUNT)
    .default(DEFAULT_NODE_COUNT)
    .describe(
      `Nodes kept running (the Auto Scaling group's minimum and desired size), 1 to ${MAX_NODE_COUNT}. Default ${DEFAULT_NODE_COUNT}.`,
    ),
  WORKCELL_NODE_MAX_COUNT: intVar(1, MAX_NODE_COUNT)
    .optional()
    .describe(
      "Largest size the Auto Scaling group may reach (rolling replacements and scaling), at least WORKCELL_NODE_COUNT. Default: WORKCELL_NODE_COUNT + 1.",
    ),
  WORKCELL_NODE_VOLUME_GB: intVar(30, 16_384)
    .default(DEFAULT_NODE_VOLUME_GB)
    .describe(
      `Root volume of each node in GiB (Docker images, the Runtime Assets, process-tier state). Default ${DEFAULT_NODE_VOLUME_GB}.`,
    ),
  WORKCELL_NODE_DRAIN_MINUTES: intVar(1, MAX_NODE_DRAIN_MINUTES)
    .default(DEFAULT_NODE_DRAIN_MINUTES)
    .describe(
      `How long a node leaving the Auto Scaling group is given to finish its runs after it is quiesced, 1 to ${MAX_NODE_DRAIN_MINUTES} minutes. Default ${DEFAULT_NODE_DRAIN_MINUTES}.`,
    ),
});

export const deploySettingsSchema = deploySettingsShape.superRefine((s, ctx) => {
  const model = s.WORKCELL_MODEL_BASE_URL !== undefined;
  if (model !== (s.WORKCELL_MODEL_NAME !== undefined)) {
    ctx.addIssue({
      code: "custom",
      path: [model ? "WORKCELL_MODEL_NAME" : "WORKCELL_MODEL_BASE_URL"],
      message: "WORKCELL_MODEL_BASE_URL and WORKCELL_MODEL_NAME go together",
    });
  }
  if (!model && s.WORKCELL_MODEL_API_KEY === "secret") {
    ctx.addIssue({
      code: "custom",
      path: ["WORKCELL_MODEL_API_KEY"],
      message: "is `secret` but no WORKCELL_MODEL_BASE_URL is set",
    });
  }
  if (
    s.WORKCELL_NODE_MAX_COUNT !== undefined &&
    s.WORKCELL_NODE_MAX_COUNT < s.WORKCELL_NODE_COUNT
  ) {
    ctx.addIssue({
      code: "custom",
      path: ["WORKCELL_NODE_MAX_COUNT"],
      message: "must be at least WORKCELL_NODE_COUNT",
    });
  }
});

export type DeploySettings = z.output<typeof deploySettingsSchema>;

/** Throws one EnvError naming every missing or bad setting and what it should be. */
export function deploySettings(env: Readonly<Record<string, string | undefined>>): DeploySettings {
  return parseEnv(deploySettingsSchema, env);
}
