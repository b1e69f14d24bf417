import type { Context, Hono } from "hono";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { limitBody } from "../../../shared/http/body-limit.ts";
import type { BatchFile } from "../../workspace/write-batch.ts";
import { requireOp } from "../capability-auth.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import { createdJson } from "../entry-json.ts";
import { queryPath } from "../query-path.ts";
import { writeUnderQuota } from "../quota-guard.ts";
import { withWorkdir } from "../workdir-opener.ts";
import type { RouteDeps } from "./route-deps.ts";

/**
 * `POST /dp/v1/files/batch?path=/dir`, `multipart/form-data`: every part is a file whose
 * `filename` is its name in `dir` (the form field names do not matter). All or nothing
 * (docs/architecture.md §5): the whole set is validated first (a bad name 400, a name twice 409,
 * too many files or bytes 413), a name that already exists is 409, and any failure while
 * writing removes what the batch wrote, so the directory ends exactly as it was. 201
 * `{items}` in the order of the parts. The directory must exist (404; a symlink 403).
 *
 * The body is parsed in memory, bounded by `maxBatchBodyBytes`: names can only be validated
 * as a set once every part has been seen. Large files go through the streamed PUT.
 */
export function registerBatchRoute(app: Hono<DataPlaneEnv>, deps: RouteDeps): void {
  app.post(
    "/dp/v1/files/batch",
    // Op and path first: a capability without `write` must not make us buffer its body.
    async function checkBeforeBody(c, next) {
      requireOp(c, "write");
      queryPath(c);
      await next();
    },
    limitBody(deps.limits.maxBatchBodyBytes, "batch"),
    async (c) => {
      const claims = requireOp(c, "write");
      const dir = queryPath(c);
      const { files, bytes } = await batchFiles(c);
      const signal = c.req.raw.signal;
      const written = await writeUnderQuota(
        deps.quota,
        claims,
        deps.limits.maxBatchBodyBytes,
        signal,
        {
          // The parts are parsed already: their sizes are known before anything is written.
          incoming: { bytes, inodes: files.length },
          write: (bound) =>
            withWorkdir(deps.userWorkspaces, claims, { create: true, signal }, (fs) =>
              fs.writeBatch(dir, files, {
                maxFiles: deps.limits.maxBatchFiles,
                maxBytes: bound,
                maxFileBytes: Math.min(deps.limits.maxUploadBytes, bound),
                signal,
              }),
            ),
          added: (infos) => ({
            bytes: infos.reduce((sum, info) => sum + info.size, 0),
            inodes: infos.length,
          }),
        },
      );
      deps.bytes.inc(
        { direction: "in" },
        written.reduce((sum, info) => sum + info.size, 0),
      );
      return c.json({ items: written.map((info) => createdJson(dir, info)) }, 201);
    },
  );
}

async function batchFiles(
  c: Context<DataPlaneEnv>,
): Promise<{ files: BatchFile[]; bytes: number }> {
  const type = c.req.header("Content-Type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(type)) {
    throw new WorkcellError(
      "invalid_request",
      "Send the batch as 'Content-Type: multipart/form-data' with one file part per file.",
      { details: { field: "Content-Type" } },
    );
  }
  let form: FormData;
  try {
    form = await c.req.raw.formData();
  } catch (err) {
    if (err instanceof WorkcellError) throw err; // the body limit
    throw new WorkcellError("invalid_request", "The multipart body is malformed.", {
      details: { reason: "malformed_multipart" },
    });
  }
  const files: BatchFile[] = [];
  let bytes = 0;
  for (const [field, value] of form.entries()) {
    if (typeof value === "string") {
      throw new WorkcellError(
        "invalid_request",
        "Every part of a batch must be a file (with a filename): remove the text field.",
        { details: { field, reason: "not_a_file" } },
      );
    }
    // The filename is the entry name, validated by the workspace layer as a single name:
    // `..`, `/`, `\`, NUL, control characters and over-long names are a bad name (400).
    files.push({ name: value.name, source: value.stream() });
    bytes += value.size;
  }
  return { files, bytes };
}
