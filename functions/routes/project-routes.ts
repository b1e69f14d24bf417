import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import {
  type Project,
  projectCreateRequestSchema,
  projectListSchema,
  projectSchema,
} from "../../shared/contracts/project.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { requestOriginOf } from "../data-plane/request-origin.ts";
import { idempotencyHeadersSchema } from "../idempotency/idempotency-key.ts";
import { idempotencyScope } from "../idempotency/idempotency-scope.ts";
import { runIdempotent, storedResponse } from "../idempotency/idempotent-transaction.ts";
import { linkedWorkdir } from "../projects/linked-workdir.ts";
import { projectBody } from "../projects/project-body.ts";
import { findProject, insertProject, listProjects } from "../projects/project-store.ts";
import { bearerSecurity, commonErrors, errorResponse, projectIdParams } from "./openapi-common.ts";

const createProject = createRoute({
  method: "post",
  path: "/v1/projects",
  summary: "Create a project (managed, or linked to an existing directory)",
  security: bearerSecurity,
  request: {
    headers: idempotencyHeadersSchema,
    body: { content: { "application/json": { schema: projectCreateRequestSchema } } },
  },
  responses: {
    201: { description: "The project", content: { "application/json": { schema: projectSchema } } },
    400: errorResponse("Bad body or workdir_path (also: a file or a symlink)."),
    404: errorResponse("workdir_path does not exist in your workspace."),
    409: errorResponse("Idempotency-Key reused with another body."),
    413: errorResponse("Body too large."),
    ...commonErrors,
  },
});

const listProjectsRoute = createRoute({
  method: "get",
  path: "/v1/projects",
  summary: "The caller's projects, newest first",
  security: bearerSecurity,
  responses: {
    200: {
      description: "Projects",
      content: { "application/json": { schema: projectListSchema } },
    },
    ...commonErrors,
  },
});

const getProject = createRoute({
  method: "get",
  path: "/v1/projects/{id}",
  summary: "One project",
  security: bearerSecurity,
  request: { params: projectIdParams },
  responses: {
    200: { description: "The project", content: { "application/json": { schema: projectSchema } } },
    404: errorResponse("No such project for this user."),
    ...commonErrors,
  },
});

export function registerProjectRoutes(
  app: OpenAPIHono<AppEnv>,
  deps: Pick<AppDeps, "db" | "dataPlane" | "tracing">,
): void {
  app.openapi(createProject, async (c) => {
    const { uid } = c.var.principal;
    const body = c.req.valid("json");
    const scope = await idempotencyScope({
      uid,
      key: c.req.valid("header")["idempotency-key"],
      method: "POST",
      path: "/v1/projects",
      body,
    });
    const replayed = await storedResponse(deps.db, scope);
    if (replayed !== undefined) return c.json(replayed.body as Project, 201);

    const workdirPath = await linkedWorkdir(
      deps.dataPlane,
      uid,
      body,
      c.req.raw.signal,
      requestOriginOf(c, deps.tracing),
    );
    const response = await runIdempotent(deps.db, scope, async (tx) => {
      const row = await insertProject(tx, {
        uid,
        name: body.name,
        ...(workdirPath === undefined ? {} : { workdirPath }),
      });
      return { status: 201, body: projectBody(row) };
    });
    return c.json(response.body as Project, 201);
  });

  app.openapi(listProjectsRoute, async (c) => {
    const rows = await listProjects(deps.db, c.var.principal.uid);
    return c.json({ items: rows.map(projectBody) }, 200);
  });

  app.openapi(getProject, async (c) => {
    const row = await findProject(deps.db, c.var.principal.uid, c.req.valid("param").id);
    if (row === undefined) throw new WorkcellError("not_found", "No such project.");
    return c.json(projectBody(row), 200);
  });
}
