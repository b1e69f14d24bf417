import { z } from "zod";
import { httpUrlVar } from "../env/env-vars.ts";

/** The KMS settings, shared by the functions' and the agent-host's env schemas. */
export const secretsKmsEnv = {
  WORKCELL_SECRETS_KMS_KEY_ID: z
    .string()
    .trim()
    .min(1)
    .optional()
    .describe(
      "AWS KMS key (id, ARN or alias/…) that seals users' secrets instead of WORKCELL_SECRETS_KEY, the same on the API and every agent-host; the role needs kms:Encrypt and kms:Decrypt on it. Rows sealed by WORKCELL_SECRETS_KEY keep opening while that is also set.",
    ),
  WORKCELL_SECRETS_KMS_ENDPOINT: httpUrlVar()
    .optional()
    .describe("Endpoint override for AWS KMS (tests, emulators); leave unset on AWS."),
};
