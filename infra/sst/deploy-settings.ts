import { z } from "zod";
import { httpUrlVar } from "../../shared/env/env-vars.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";

// What `sst deploy` needs from the operator's environment, validated when sst.config.ts
// runs: a missing OIDC issuer or data-plane URL fails the deploy with every problem named,
// instead of deploying functions whose every cold start fails (the old `?? ""` fallbacks).

const httpsUrl = () =>
  z.url({ protocol: /^https$/, error: "must be an https:// URL (browsers reach it)" });

export const deploySettingsSchema = z.object({
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
});

export type DeploySettings = z.output<typeof deploySettingsSchema>;

/** Throws one EnvError naming every missing or bad setting and what it should be. */
export function deploySettings(env: Readonly<Record<string, string | undefined>>): DeploySettings {
  return parseEnv(deploySettingsSchema, env);
}
