import { z } from "zod";
import { ed25519PrivateJwkVar, ed25519PublicJwkVar } from "../../shared/env/env-vars.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";

// The body of /etc/workcell/agent-host.env shared by every node of a deployment, stored as
// one SecureString SSM parameter by the deploy (it holds the database password) and
// written by each node's first boot (node-user-data.ts), which appends its own NODE_ID.

export type AgentHostEnvValues = {
  DATABASE_URL: string;
  DATA_ROOT: string;
  RUN_QUEUE_URL: string;
  RUN_DLQ_URL: string;
  ATTACHMENTS_BUCKET: string;
  AWS_REGION: string;
  CAPABILITY_PUBLIC_KEY: string;
  DATA_PLANE_PORT: string;
  DATA_PLANE_PUBLIC_URL: string;
  DATA_PLANE_CORS_ORIGINS: string;
  /** The model server (all three unset: the `shell` model). */
  MODEL_BASE_URL?: string | undefined;
  MODEL_NAME?: string | undefined;
  MODEL_API_KEY?: string | undefined;
  /** Secrets brokering (decision 0164): the KMS key that opens secrets, the CA's files. */
  WORKCELL_SECRETS_KMS_KEY_ID?: string | undefined;
  WORKCELL_SECRETS_CA_CERT?: string | undefined;
  WORKCELL_SECRETS_CA_KEY?: string | undefined;
};

/**
 * `KEY='value'` lines, which systemd's EnvironmentFile= and shells both take literally
 * (the JWK is full of double quotes: decision 0025). A value with a single quote or a
 * line break cannot be written so and is refused by name, never echoed.
 */
export function renderAgentHostEnv(values: AgentHostEnvValues): string {
  const lines = ["# Written by sst deploy (infra/sst/agent-host-env-file.ts); NODE_ID follows."];
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    if (/['\r\n\0]/.test(value)) {
      throw new Error(`agent-host env: ${name} contains a quote or a line break`);
    }
    lines.push(`${name}='${value}'`);
  }
  return `${lines.join("\n")}\n`;
}

/**
 * The public half of the capability signing key, for the nodes: the private JWK is
 * checked with the functions' own parser, and the result with the agent-host's, so a
 * node can never be handed the private `d`. Errors never contain the key.
 */
export function capabilityPublicJwk(privateJwkText: string): string {
  const { CAPABILITY_PRIVATE_KEY: jwk } = parseEnv(
    z.object({ CAPABILITY_PRIVATE_KEY: ed25519PrivateJwkVar() }),
    { CAPABILITY_PRIVATE_KEY: privateJwkText },
  );
  const { kty, crv, x, kid } = jwk;
  const text = JSON.stringify(kid === undefined ? { kty, crv, x } : { kty, crv, x, kid });
  parseEnv(z.object({ CAPABILITY_PUBLIC_KEY: ed25519PublicJwkVar() }), {
    CAPABILITY_PUBLIC_KEY: text,
  });
  return text;
}
