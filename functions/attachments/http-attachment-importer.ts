import {
  ATTACHMENT_IMPORT_PATH,
  attachmentImportResponseSchema,
} from "../../shared/contracts/attachment-import.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { CapabilityMinter } from "../capability/capability-minter.ts";
import {
  CAPABILITY_REFUSALS,
  createDataPlaneHttp,
  type DataPlaneAnswer,
  deadlineOf,
  errorBodyOf,
  errorReasonOf,
  KEY_PAIR_MISMATCH,
  parseJson,
} from "../data-plane/data-plane-http.ts";
import type { AttachmentImporter, ImportResult } from "./attachment-importer.ts";
import { DEFAULT_ATTACHMENT_LIMITS } from "./attachment-limits.ts";

/** The data plane's public delete (docs/api.md "Workdir files"); spelled out, not imported. */
const DELETE_FILE_PATH = "/dp/v1/files";
/** Refusals of the data plane that are the client's to see (the batch wrote nothing). */
const CLIENT_STATUSES = new Set([400, 403, 404, 409, 413, 422, 507]);

export type HttpAttachmentImporterOptions = {
  /** DATA_PLANE_URL. */
  baseUrl: string;
  capabilities: CapabilityMinter;
  importTimeoutMs?: number;
  removeTimeoutMs?: number;
  importCapabilityTtlSeconds?: number;
  fetch?: typeof fetch;
};

/**
 * The importer over the data plane's HTTP API. Each call mints its own capability for
 * exactly the target's uid and Workdir and exactly the op it needs (`import` for the
 * import, `delete` for removals), used at once by us and never handed to a client.
 *
 * If our request is cut (timeout, the client went away), the data plane sees the
 * connection close, aborts the import and removes what it wrote.
 */
export function createHttpAttachmentImporter(
  options: HttpAttachmentImporterOptions,
): AttachmentImporter {
  const http = createDataPlaneHttp(options);
  const importTimeoutMs = options.importTimeoutMs ?? DEFAULT_ATTACHMENT_LIMITS.importTimeoutMs;
  const removeTimeoutMs = options.removeTimeoutMs ?? DEFAULT_ATTACHMENT_LIMITS.removeTimeoutMs;
  const ttlSeconds =
    options.importCapabilityTtlSeconds ?? DEFAULT_ATTACHMENT_LIMITS.importCapabilityTtlSeconds;

  return {
    async importFiles(target, items, signal) {
      const timed = deadlineOf(signal, importTimeoutMs);
      const { token } = await options.capabilities.mint(
        {
          uid: target.uid,
          workdirPath: target.workdirPath,
          ops: ["import"],
          ttlSeconds,
          ...(target.quota === undefined ? {} : { quota: target.quota }),
        },
        timed,
      );
      const answer = await http.request({
        path: ATTACHMENT_IMPORT_PATH,
        method: "POST",
        token,
        body: { workdir_path: target.workdirPath, items },
        signal: timed,
        callerSignal: signal,
        purpose: "to import the attachments",
        ...(target.origin === undefined ? {} : { origin: target.origin }),
      });
      if (answer.status === 200) {
        const parsed = attachmentImportResponseSchema.safeParse(parseJson(answer.text));
        const ids = items.map((item) => item.file_id).join();
        if (!parsed.success || parsed.data.items.map((item) => item.file_id).join() !== ids) {
          throw new WorkcellError(
            "internal",
            "The data plane answered the import with an unexpected body: its version does not match functions/.",
          );
        }
        return { ok: true, items: parsed.data.items };
      }
      return refusalOf(answer);
    },

    async removeFiles(target, paths, signal) {
      if (paths.length === 0) return [];
      const timed = deadlineOf(signal, removeTimeoutMs);
      const { token } = await options.capabilities.mint(
        { uid: target.uid, workdirPath: target.workdirPath, ops: ["delete"], ttlSeconds },
        timed,
      );
      const failed: string[] = [];
      for (const path of paths) {
        try {
          const answer = await http.request({
            path: `${DELETE_FILE_PATH}?${new URLSearchParams({ path: `/${path}` })}`,
            method: "DELETE",
            token,
            signal: timed,
            callerSignal: signal,
            purpose: "to remove an imported file",
            ...(target.origin === undefined ? {} : { origin: target.origin }),
          });
          if (answer.status !== 204 && answer.status !== 404) failed.push(path);
        } catch {
          // Unreachable: reported as not removed; the caller logs it.
          signal.throwIfAborted();
          failed.push(path);
        }
      }
      return failed;
    },
  };
}

/** A non-200 answer of the import: the client's error, or ours (thrown). */
function refusalOf({ status, text }: DataPlaneAnswer): ImportResult {
  const body = errorBodyOf(text);
  const reason = errorReasonOf(body);
  if (status === 401) throw new WorkcellError("internal", KEY_PAIR_MISMATCH);
  if (status === 403 && reason !== undefined && CAPABILITY_REFUSALS.has(reason)) {
    throw new WorkcellError(
      "internal",
      `The data plane refused the import capability (${reason}): functions/ minted the wrong scope.`,
    );
  }
  if (CLIENT_STATUSES.has(status) && body !== undefined) {
    return {
      ok: false,
      error: new WorkcellError(body.code, body.message, {
        ...(body.details === undefined ? {} : { details: body.details }),
      }),
    };
  }
  throw new WorkcellError(
    "unavailable",
    `The workspace service could not import the attachments (HTTP ${status}): retry later.`,
  );
}
