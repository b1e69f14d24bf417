import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import {
  type TokenScope,
  tokenCreateRequestSchema,
  tokenCreateResponseSchema,
  tokenListSchema,
} from "../../shared/contracts/personal-token.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppEnv } from "../app-env.ts";
import type { PersonalTokens } from "../tokens/personal-token-store.ts";
import { bearerSecurity, commonErrors, errorResponse, uuidPathParam } from "./openapi-common.ts";

const DEFAULT_SCOPES: readonly TokenScope[] = ["runs", "files"];
const signInOnly = errorResponse(
  "Called with a personal access token (tokens are managed with a sign-in token), or an `admin` scope asked by a non-admin.",
);

const createTokenRoute = createRoute({
  method: "post",
  path: "/v1/tokens",
  summary: "Create a personal access token (shown once)",
  description:
    "The token is returned this once and stored only as a keyed hash. It carries the caller's uid and at most the scopes asked (`admin` only for an admin). Needs a sign-in token, never a PAT.",
  security: bearerSecurity,
  request: {
    body: { content: { "application/json": { schema: tokenCreateRequestSchema } }, required: true },
  },
  responses: {
    201: {
      description: "Created",
      content: { "application/json": { schema: tokenCreateResponseSchema } },
    },
    400: errorResponse("Bad body."),
    403: signInOnly,
    ...commonErrors,
  },
});

const listTokensRoute = createRoute({
  method: "get",
  path: "/v1/tokens",
  summary: "The caller's personal access tokens (never their secrets)",
  security: bearerSecurity,
  responses: {
    200: { description: "Tokens", content: { "application/json": { schema: tokenListSchema } } },
    403: signInOnly,
    ...commonErrors,
  },
});

const revokeTokenRoute = createRoute({
  method: "delete",
  path: "/v1/tokens/{token_id}",
  summary: "Revoke a personal access token; it stops working on the next request",
  security: bearerSecurity,
  request: { params: z.object({ token_id: uuidPathParam("token_id", "Token id") }) },
  responses: {
    204: { description: "Revoked (also when it already was)" },
    403: signInOnly,
    404: errorResponse("No such token of the caller's."),
    ...commonErrors,
  },
});

/** `/v1/tokens` (docs/api.md "Personal access tokens"). require-scope.ts keeps PATs out. */
export function registerTokenRoutes(app: OpenAPIHono<AppEnv>, tokens: PersonalTokens): void {
  app.openapi(createTokenRoute, async (c) => {
    const body = c.req.valid("json");
    const { principal } = c.var;
    const scopes = body.scopes ?? DEFAULT_SCOPES;
    if (scopes.includes("admin") && !principal.admin) {
      throw new WorkcellError("forbidden", "Only an administrator can grant the admin scope.", {
        details: { reason: "admin_required" },
      });
    }
    const created = await tokens.create(principal.uid, {
      name: body.name,
      scopes,
      ...(body.expires_in_days === undefined ? {} : { expiresInDays: body.expires_in_days }),
    });
    c.var.logger.info({ token_id: created.token_id, scopes }, "personal access token created");
    return c.json(created, 201);
  });
  app.openapi(listTokensRoute, async (c) =>
    c.json({ items: await tokens.list(c.var.principal.uid) }, 200),
  );
  app.openapi(revokeTokenRoute, async (c) => {
    const { token_id } = c.req.valid("param");
    if (!(await tokens.revoke(c.var.principal.uid, token_id))) {
      throw new WorkcellError("not_found", "No such token.");
    }
    c.var.logger.info({ token_id }, "personal access token revoked");
    return c.body(null, 204);
  });
}
