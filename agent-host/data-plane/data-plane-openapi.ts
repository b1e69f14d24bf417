import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { dataPlaneFileListSchema } from "../../shared/contracts/data-plane-files.ts";
import { errorBodySchema } from "../../shared/contracts/error-body.ts";

const CAPABILITY = "capability";
const security = [{ [CAPABILITY]: [] }];
const error = (description: string) => ({
  description,
  content: { "application/json": { schema: errorBodySchema } },
});
/** What every capability-authorized route may answer. */
const common = {
  401: error("Missing, bad or expired capability."),
  403: error(
    "Out of the capability's scope or operations, a path with `..`/`\\`/`://`, or a symlink or special file on the way.",
  ),
  429: {
    ...error(
      "Over the uid's requests_per_minute (the same bucket as the API's): `rate_limited`, reason `requests_per_minute`; nothing was read or written.",
    ),
    headers: {
      "Retry-After": {
        description: "Whole seconds until a request may succeed (at least 1).",
        schema: { type: "integer" as const, minimum: 1 },
      },
    },
  },
  500: error("Internal error (no internals in the message)."),
};
const pathQuery = (what: string) =>
  z.object({
    path: z
      .string()
      .min(1)
      .describe(`${what}: Workdir-relative with a leading \`/\` (\`/\` is the Workdir root).`)
      .openapi({ example: "/outputs/a.txt" }),
  });
const bytes = z.string().describe("The file's bytes.").openapi({ format: "binary" });

const ROUTES = [
  createRoute({
    method: "get",
    path: "/dp/v1/files",
    operationId: "listFiles",
    tags: ["Files"],
    summary: "The entries of a Workdir directory (regular files and real directories only)",
    security,
    request: { query: pathQuery("The directory") },
    responses: {
      200: {
        description: "The entries",
        content: { "application/json": { schema: dataPlaneFileListSchema } },
      },
      400: error("The path is a file."),
      404: error("No such directory."),
      ...common,
    },
  }),
  createRoute({
    method: "get",
    path: "/dp/v1/files/content",
    operationId: "readFile",
    tags: ["Files"],
    summary: "A file's bytes (Range supported)",
    security,
    request: { query: pathQuery("The file") },
    responses: {
      200: { description: "The bytes", content: { "application/octet-stream": { schema: bytes } } },
      206: {
        description: "The requested range",
        content: { "application/octet-stream": { schema: bytes } },
      },
      400: error("The path is a directory."),
      404: error("No such file."),
      416: error("The range is outside the file."),
      ...common,
    },
  }),
  createRoute({
    method: "put",
    path: "/dp/v1/files/content",
    operationId: "writeFile",
    tags: ["Files"],
    summary: "Create a file (never overwrites)",
    security,
    request: {
      query: pathQuery("The new file"),
      body: {
        required: true,
        content: { "application/octet-stream": { schema: bytes, example: "hello\n" } },
      },
    },
    responses: {
      201: { description: "Created" },
      404: error("The parent is missing or a file."),
      409: error("An entry with this name exists (even a symlink); it is left untouched."),
      413: error("Larger than the upload limit."),
      507: error("Over the UserWorkspace quota; nothing written."),
      ...common,
    },
  }),
  createRoute({
    method: "delete",
    path: "/dp/v1/files",
    operationId: "deleteFile",
    tags: ["Files"],
    summary: "Delete a file or directory (a symlink is removed as a link, never followed)",
    security,
    request: { query: pathQuery("The entry") },
    responses: {
      204: { description: "Deleted" },
      400: error("The Workdir root itself."),
      404: error("No such entry."),
      ...common,
    },
  }),
  createRoute({
    method: "post",
    path: "/dp/v1/files/batch",
    operationId: "uploadFiles",
    tags: ["Files"],
    summary: "Several files into one directory, all or nothing (multipart, one file part each)",
    security,
    request: {
      query: pathQuery("The directory"),
      body: {
        required: true,
        content: {
          "multipart/form-data": {
            schema: z.object({
              file: z.array(bytes).describe("One part per file; its filename is its name."),
            }),
          },
        },
      },
    },
    responses: {
      201: { description: "All written" },
      400: error("A bad name, or a part that is not a file; nothing written."),
      409: error("A name twice in the batch, or an existing name; nothing written."),
      413: error("Too many files or bytes."),
      507: error("Over the UserWorkspace quota; nothing written."),
      ...common,
    },
  }),
  createRoute({
    method: "post",
    path: "/dp/v1/dirs",
    operationId: "createDirectory",
    tags: ["Files"],
    summary: "Create a directory (its parent must exist)",
    security,
    request: { query: pathQuery("The new directory") },
    responses: {
      201: { description: "Created" },
      404: error("The parent is missing."),
      409: error("An entry with this name exists."),
      ...common,
    },
  }),
];

/**
 * The data plane's own OpenAPI document (`GET /dp/openapi.json`), the Workdir files API of
 * docs/api.md. The routes are plain Hono handlers (they stream bodies the zod layer would
 * buffer), so the document is declared here, beside them, from the shared contracts.
 */
export function dataPlaneOpenApiDocument(serverUrl: string): Record<string, unknown> {
  const registry = new OpenAPIHono();
  for (const route of ROUTES) registry.openAPIRegistry.registerPath(route);
  registry.openAPIRegistry.registerComponent("securitySchemes", CAPABILITY, {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "A capability from the API's POST /v1/threads/{thread_id}/files/access: one user, one Workdir, named operations, minutes.",
  });
  const doc = registry.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Workcell data plane",
      version: "1",
      description:
        "Files of one Workdir on an agent-host, authorized by a short-lived capability. Errors are `{error: {code, message, details?}}`.",
    },
    servers: [{ url: serverUrl, description: "This agent-host (where this document was served)" }],
    tags: [{ name: "Files", description: "The Workdir's files." }],
  });
  return doc as unknown as Record<string, unknown>;
}
