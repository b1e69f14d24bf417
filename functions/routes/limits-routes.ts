import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { uidSchema } from "../../shared/contracts/common.ts";
import {
  DEFAULT_USER_LIMITS,
  effectiveLimits,
  type UserLimits,
  userLimitsOverrideSchema,
  userLimitsSchema,
} from "../../shared/limits/user-limits.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { findLimitsOverride, putLimitsOverride } from "../limits/user-limits-store.ts";
import { bearerSecurity, commonErrors, errorResponse } from "./openapi-common.ts";

const adminLimitsSchema = z
  .object({
    uid: uidSchema,
    limits: userLimitsSchema,
    overrides: userLimitsOverrideSchema.describe("What an admin set; the rest are defaults."),
  })
  .openapi("AdminUserLimits");

const uidParams = z.object({ uid: uidSchema.openapi({ param: { name: "uid", in: "path" } }) });

const getLimits = createRoute({
  method: "get",
  path: "/v1/admin/users/{uid}/limits",
  summary: "A user's limits and an admin's overrides (admin only)",
  security: bearerSecurity,
  request: { params: uidParams },
  responses: {
    200: { description: "Limits", content: { "application/json": { schema: adminLimitsSchema } } },
    403: errorResponse("The caller is not an admin."),
    ...commonErrors,
  },
});

const putLimits = createRoute({
  method: "put",
  path: "/v1/admin/users/{uid}/limits",
  summary: "Replace a user's overrides; fields left out take the defaults (admin only)",
  security: bearerSecurity,
  request: {
    params: uidParams,
    body: { content: { "application/json": { schema: userLimitsOverrideSchema } } },
  },
  responses: {
    200: { description: "Limits", content: { "application/json": { schema: adminLimitsSchema } } },
    400: errorResponse("Bad body."),
    403: errorResponse("The caller is not an admin."),
    ...commonErrors,
  },
});

export type LimitsRoutesDeps = Pick<AppDeps, "db"> & { readonly userLimitDefaults?: UserLimits };

/**
 * `GET/PUT /v1/admin/users/{uid}/limits` (docs/api.md "Limits and usage"). The admin check is
 * the `/v1/admin/*` middleware (app.ts), before these validators run.
 */
export function registerLimitsRoutes(app: OpenAPIHono<AppEnv>, deps: LimitsRoutesDeps): void {
  const defaults = deps.userLimitDefaults ?? DEFAULT_USER_LIMITS;
  const answer = async (uid: string) => {
    const overrides = await findLimitsOverride(deps.db, uid);
    return { uid, limits: effectiveLimits(overrides, defaults), overrides };
  };
  app.openapi(getLimits, async (c) => c.json(await answer(c.req.valid("param").uid), 200));
  app.openapi(putLimits, async (c) => {
    const { uid } = c.req.valid("param");
    await putLimitsOverride(deps.db, uid, c.req.valid("json"));
    return c.json(await answer(uid), 200);
  });
}
