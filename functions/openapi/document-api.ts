import { OPERATIONS, TAGS } from "./operation-table.ts";

/** Name of the event-ticket security scheme (POST /v1/runs/{id}/events/ticket). */
export const EVENT_TICKET_SCHEME = "eventTicket";

type Json = Record<string, unknown>;
type Operation = Json & {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Json[];
  requestBody?: { content?: Record<string, Json> };
  responses?: Record<string, { content?: Record<string, Json> }>;
};

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;
/** Routes answered without a token. */
const PUBLIC = new Set(["GET /v1/healthz"]);

/**
 * Completes the document the routes' zod schemas generate with what a client generator
 * and a linter need and the schemas cannot say: operationIds and tags (operation-table.ts),
 * the server the document was fetched from, `security: []` on public routes, request
 * examples, and the event stream (Last-Event-ID, the ticket, RunEvent frames).
 */
export function documentApi(doc: Json, serverUrl: string): Json {
  const used = new Set<string>();
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Operation>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation === undefined) continue;
      const key = `${method.toUpperCase()} ${path}`;
      const info = OPERATIONS[key];
      operation.operationId ??= info?.operationId ?? derivedOperationId(method, path);
      operation.tags ??= [info?.tag ?? derivedTag(path)];
      for (const tag of operation.tags) used.add(tag);
      if (PUBLIC.has(key)) operation.security = [];
      const json = operation.requestBody?.content?.["application/json"];
      if (json !== undefined && info?.example !== undefined) json.example = info.example;
    }
  }
  documentEventStream(paths["/v1/runs/{run_id}/events"]?.get);

  const components = (doc.components ?? {}) as { securitySchemes?: Json };
  components.securitySchemes = {
    ...components.securitySchemes,
    [EVENT_TICKET_SCHEME]: {
      type: "apiKey",
      in: "query",
      name: "ticket",
      description:
        "For EventSource: the `url` of POST /v1/runs/{run_id}/events/ticket carries it. Accepted by that run's event stream only.",
    },
  };
  return {
    ...doc,
    info: {
      title: "Workcell API",
      version: "1",
      description:
        "The public API of Workcell: projects, threads, runs with live events, Workdir file access through the data plane, attachments and skills. Errors are `{error: {code, message, details?}}` with the codes of the catalogue.",
    },
    servers: [{ url: serverUrl, description: "This deployment (where this document was served)" }],
    tags: [...used].sort().map((name) => ({
      name,
      description: (TAGS as Record<string, string>)[name] ?? `${name} operations.`,
    })),
    components,
  };
}

function documentEventStream(operation: Operation | undefined): void {
  if (operation === undefined) return;
  operation.security = [{ bearer: [] }, { [EVENT_TICKET_SCHEME]: [] }];
  const parameters = operation.parameters ?? [];
  if (!parameters.some((p) => String(p.name).toLowerCase() === "last-event-id")) {
    parameters.push({
      name: "Last-Event-ID",
      in: "header",
      required: false,
      description:
        "Resume after this event (its `seq`, the SSE `id`); EventSource sends it on reconnect.",
      schema: { type: "string", pattern: "^\\d{0,15}$" },
      example: "12",
    });
  }
  operation.parameters = parameters;
  const stream = operation.responses?.["200"]?.content;
  if (stream !== undefined) {
    stream["text/event-stream"] = {
      // The schema of each frame's `data` (one JSON RunEvent); the frame's `id` is its
      // `seq` and `event` its `type`.
      schema: { $ref: "#/components/schemas/RunEvent" },
    };
  }
}

function derivedOperationId(method: string, path: string): string {
  const words = path
    .replace(/^\/v1\//, "")
    .split("/")
    .map((part) => part.replace(/^\{(.+)\}$/, "by_$1"))
    .join("_")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return [method, ...words]
    .map((w, i) => (i === 0 ? w : w[0]?.toUpperCase() + w.slice(1)))
    .join("");
}

function derivedTag(path: string): string {
  if (path.startsWith("/v1/admin/")) return "Admin";
  const segment = path.split("/")[2] ?? "API";
  return segment.charAt(0).toUpperCase() + segment.slice(1);
}
