import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import {
  putSecretSchema,
  secretListSchema,
  secretNameSchema,
  secretSchema,
} from "../../shared/contracts/secret.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { KeyWrapper } from "../../shared/secrets/secret-envelope.ts";
import { deleteSecret, listSecrets, putSecret } from "../../shared/secrets/secret-store.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { bearerSecurity, commonErrors, errorResponse } from "./openapi-common.ts";

const nameParams = z.object({
  name: secretNameSchema.openapi({ param: { name: "name", in: "path" } }),
});

const putSecretRoute = createRoute({
  method: "put",
  path: "/v1/secrets/{name}",
  summary: "Store or replace a secret (write-only); sandboxes get a placeholder, never the value",
  security: bearerSecurity,
  request: {
    params: nameParams,
    body: { content: { "application/json": { schema: putSecretSchema } }, required: true },
  },
  responses: {
    200: {
      description: "The secret, without its value",
      content: { "application/json": { schema: secretSchema } },
    },
    400: errorResponse("Bad body (a host that is not a pattern, a template without {value})."),
    ...commonErrors,
  },
});

const listSecretsRoute = createRoute({
  method: "get",
  path: "/v1/secrets",
  summary: "The caller's secrets (names and bindings; values are never returned)",
  security: bearerSecurity,
  responses: {
    200: {
      description: "The secrets",
      content: { "application/json": { schema: secretListSchema } },
    },
    ...commonErrors,
  },
});

const deleteSecretRoute = createRoute({
  method: "delete",
  path: "/v1/secrets/{name}",
  summary: "Delete a secret; the proxy stops sending it at the next request",
  security: bearerSecurity,
  request: { params: nameParams },
  responses: {
    204: { description: "Deleted" },
    404: errorResponse("No such secret of the caller's."),
    ...commonErrors,
  },
});

export type SecretRoutesDeps = Pick<AppDeps, "db"> & {
  /** The deployment's key (WORKCELL_SECRETS_KEY or _KMS_KEY_ID); without it PUT answers 503. */
  readonly secretKeys?: KeyWrapper;
};

/**
 * docs/api.md "Secrets" (decision 0131): per-user, write-only. Nothing here logs or
 * returns the value: the log lines name the secret only.
 */
export function registerSecretRoutes(app: OpenAPIHono<AppEnv>, deps: SecretRoutesDeps): void {
  app.openapi(putSecretRoute, async (c) => {
    const keys = deps.secretKeys;
    if (keys === undefined) {
      throw new WorkcellError(
        "unavailable",
        "This deployment stores no secrets: its operator has set neither WORKCELL_SECRETS_KEY nor WORKCELL_SECRETS_KMS_KEY_ID. Nothing was stored.",
        { details: { reason: "secrets_not_configured" } },
      );
    }
    const { name } = c.req.valid("param");
    const secret = await putSecret(deps.db, keys, c.var.principal.uid, name, c.req.valid("json"));
    c.var.logger.info({ secret: name, hosts: secret.hosts }, "secret stored");
    return c.json(secret, 200);
  });
  app.openapi(listSecretsRoute, async (c) =>
    c.json({ items: await listSecrets(deps.db, c.var.principal.uid) }, 200),
  );
  app.openapi(deleteSecretRoute, async (c) => {
    const { name } = c.req.valid("param");
    if (!(await deleteSecret(deps.db, c.var.principal.uid, name))) {
      throw new WorkcellError("not_found", "No such secret.");
    }
    c.var.logger.info({ secret: name }, "secret deleted");
    return c.body(null, 204);
  });
}
