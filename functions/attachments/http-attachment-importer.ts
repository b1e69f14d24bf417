import {
  ATTACHMENT_IMPORT_PATH,
  attachmentImportResponseSchema,
} from "../../shared/contracts/attachment-import.ts";
import { ERROR_CODES, type ErrorCode } from "../../shared/errors/error-catalogue.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { CapabilityMinter } from "../capability/capability-minter.ts";
import type { AttachmentImporter, ImportResult } from "./attachment-importer.ts";
import { DEFAULT_ATTACHMENT_LIMITS } from "./attachment-limits.ts";

/** The data plane's public delete (API.md "Workdir files"); spelled out, not imported. */
const DELETE_FILE_PATH = "/dp/v1/files";
/** Data-plane 403 reasons that mean our capability was wrong, not the user's Workdir. */
const CAPABILITY_REFUSALS = new Set(["operation_not_granted", "capability_scope"]);
/** Refusals of the data plane that are the client's to see (the batch wrote nothing). */
const CLIENT_STATUSES = new Set([400, 403, 404, 409, 413]);

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
  const fetchImpl = options.fetch ?? fetch;
  const base = options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`;
  // Relative to the base so a base URL with a path prefix (a proxy route) keeps it.
  const importUrl = new URL(ATTACHMENT_IMPORT_PATH.slice(1), base).toString();
  const deleteUrl = new URL(DELETE_FILE_PATH.slice(1), base).toString();
  const importTimeoutMs = options.importTimeoutMs ?? DEFAULT_ATTACHMENT_LIMITS.importTimeoutMs;
  const removeTimeoutMs = options.removeTimeoutMs ?? DEFAULT_ATTACHMENT_LIMITS.removeTimeoutMs;
  const ttlSeconds =
    options.importCapabilityTtlSeconds ?? DEFAULT_ATTACHMENT_LIMITS.importCapabilityTtlSeconds;

  return {
    async importFiles(target, items, signal) {
      const timed = AbortSignal.any([signal, AbortSignal.timeout(importTimeoutMs)]);
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
      const response = await send(fetchImpl, importUrl, timed, signal, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: JSON.stringify({ workdir_path: target.workdirPath, items }),
      });
      if (response.status === 200) {
        const parsed = attachmentImportResponseSchema.safeParse(await response.json());
        const ids = items.map((item) => item.file_id).join();
        if (!parsed.success || parsed.data.items.map((item) => item.file_id).join() !== ids) {
          throw new WorkcellError(
            "internal",
            "The data plane answered the import with an unexpected body: its version does not match functions/.",
          );
        }
        return { ok: true, items: parsed.data.items };
      }
      return refusalOf(response);
    },

    async removeFiles(target, paths, signal) {
      if (paths.length === 0) return [];
      const timed = AbortSignal.any([signal, AbortSignal.timeout(removeTimeoutMs)]);
      const { token } = await options.capabilities.mint(
        { uid: target.uid, workdirPath: target.workdirPath, ops: ["delete"], ttlSeconds },
        timed,
      );
      const failed: string[] = [];
      for (const path of paths) {
        const url = `${deleteUrl}?${new URLSearchParams({ path: `/${path}` })}`;
        try {
          const response = await send(fetchImpl, url, timed, signal, {
            method: "DELETE",
            headers: { Authorization: `Bearer ${token}` },
          });
          await response.body?.cancel();
          if (response.status !== 204 && response.status !== 404) failed.push(path);
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

async function send(
  fetchImpl: typeof fetch,
  url: string,
  timed: AbortSignal,
  callerSignal: AbortSignal,
  init: RequestInit,
): Promise<Response> {
  try {
    return await fetchImpl(url, { ...init, signal: timed });
  } catch (cause) {
    callerSignal.throwIfAborted();
    throw new WorkcellError(
      "unavailable",
      "The workspace service cannot be reached to import the attachments: retry later.",
      { cause },
    );
  }
}

/** A non-200 answer of the import: the client's error, or ours (thrown). */
async function refusalOf(response: Response): Promise<ImportResult> {
  const body = await errorBodyOf(response);
  const reason = typeof body?.details?.reason === "string" ? body.details.reason : undefined;
  if (response.status === 401) {
    throw new WorkcellError(
      "internal",
      "The data plane refused the control plane's capability: CAPABILITY_PRIVATE_KEY and the data plane's CAPABILITY_PUBLIC_KEY are not a pair.",
    );
  }
  if (response.status === 403 && reason !== undefined && CAPABILITY_REFUSALS.has(reason)) {
    throw new WorkcellError(
      "internal",
      `The data plane refused the import capability (${reason}): functions/ minted the wrong scope.`,
    );
  }
  if (CLIENT_STATUSES.has(response.status) && body !== undefined) {
    return {
      ok: false,
      error: new WorkcellError(body.code, body.message, {
        ...(body.details === undefined ? {} : { details: body.details }),
      }),
    };
  }
  throw new WorkcellError(
    "unavailable",
    `The workspace service could not import the attachments (HTTP ${response.status}): retry later.`,
  );
}

type ErrorBody = { code: ErrorCode; message: string; details?: Record<string, unknown> };

/** The API-shaped error of a data-plane answer, if it has one. */
async function errorBodyOf(response: Response): Promise<ErrorBody | undefined> {
  const text = await response.text().catch(() => "");
  try {
    const error = (JSON.parse(text) as { error?: Partial<ErrorBody> }).error;
    if (
      error === undefined ||
      typeof error.message !== "string" ||
      !(ERROR_CODES as readonly unknown[]).includes(error.code)
    ) {
      return undefined;
    }
    return error as ErrorBody;
  } catch {
    return undefined;
  }
}
