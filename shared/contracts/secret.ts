import { z } from "@hono/zod-openapi";
import { hostPatternSchema } from "../network/host-pattern.ts";
import { timestampSchema } from "./common.ts";

// Secrets (docs/api.md "Secrets", docs/architecture.md §15). The value is write-only: it is
// in the PUT body and nowhere else (no response, log, event or error holds it).

export const SECRET_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;
export const MAX_SECRET_VALUE_CHARS = 8192;
export const MAX_SECRET_HOSTS = 32;
export const DEFAULT_SECRET_HEADER = "Authorization";
export const DEFAULT_SECRET_TEMPLATE = "Bearer {value}";

// Variables a sandbox's tools depend on (its shell, the proxy's and the trust's): a secret
// of that name would replace them in every exec, so such names are refused.
const RESERVED_NAMES = new Set([
  "PATH",
  "HOME",
  "USER",
  "SHELL",
  "PWD",
  "TMPDIR",
  "LANG",
  "TERM",
  "HOSTNAME",
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  "NODE_OPTIONS",
  "PYTHONPATH",
  "PYTHONHOME",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "NODE_USE_ENV_PROXY",
  "PIP_PROXY",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "CURL_CA_BUNDLE",
  "REQUESTS_CA_BUNDLE",
  "NODE_EXTRA_CA_CERTS",
  "GIT_SSL_CAINFO",
  "PIP_CERT",
]);

export const secretNameSchema = z
  .string()
  .regex(SECRET_NAME, "must be [A-Z][A-Z0-9_]{0,63} (an environment variable name)")
  .refine(
    (name) =>
      !RESERVED_NAMES.has(name) && !name.startsWith("WORKCELL_") && !name.startsWith("NPM_CONFIG_"),
    "is a variable the sandbox's tools need (PATH, the proxy's, the trust's, WORKCELL_*): choose another name",
  )
  .openapi({ example: "GITHUB_TOKEN" });

// Values, headers and templates end up in an HTTP header: no control characters (a CR/LF
// would split the request the proxy sends).
const headerText = /^[\t\x20-\x7e\x80-\uffff]*$/;

export const putSecretSchema = z
  .object({
    value: z
      .string()
      .min(1)
      .max(MAX_SECRET_VALUE_CHARS)
      .regex(headerText, "must not contain control characters")
      .describe("Write-only: never returned, logged or shown again."),
    hosts: z
      .array(hostPatternSchema)
      .min(1)
      .max(MAX_SECRET_HOSTS)
      .describe("The hosts the proxy sends it to; any other host never gets it."),
    header: z
      .string()
      .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/, "must be an HTTP header name")
      .default(DEFAULT_SECRET_HEADER)
      .describe("The request header that carries it."),
    template: z
      .string()
      .max(256)
      .regex(headerText, "must not contain control characters")
      .refine((text) => text.split("{value}").length === 2, "must contain {value} exactly once")
      .default(DEFAULT_SECRET_TEMPLATE)
      .describe("The header's value, `{value}` standing for the secret."),
  })
  .strict()
  .openapi("PutSecret");

export type PutSecret = z.infer<typeof putSecretSchema>;

export const secretSchema = z
  .object({
    name: secretNameSchema,
    hosts: z.array(z.string()),
    header: z.string(),
    template: z.string(),
    created_at: timestampSchema,
    updated_at: timestampSchema,
  })
  .openapi("Secret")
  .describe("A stored secret, without its value (values are never returned).");

export type Secret = z.infer<typeof secretSchema>;

export const secretListSchema = z.object({ items: z.array(secretSchema) }).openapi("SecretList");
