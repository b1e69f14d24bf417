import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { CapabilityMinter } from "../capability/capability-minter.ts";
import type { DataPlaneClient, WorkdirCheck } from "./data-plane-client.ts";

/**
 * Internal endpoint of the agent-host data plane (agent-host/data-plane/routes/
 * internal-routes.ts). Spelled out here rather than imported: functions/ must not bundle
 * agent-host code (it runs on Workers), and the integration tests call the real data
 * plane, so a drift fails them.
 */
export const WORKDIR_CHECK_PATH = "/internal/v1/workdirs/check";
/** The check is one directory walk; a data plane slower than this counts as down. */
export const DEFAULT_DATA_PLANE_TIMEOUT_MS = 5_000;
/** The check's capability is used at once, by us: it needs to live only seconds. */
export const CHECK_CAPABILITY_TTL_SECONDS = 30;
/** Data-plane 403 reasons that mean our capability was wrong, not that the path is a symlink. */
const CAPABILITY_REFUSALS = new Set(["operation_not_granted", "capability_scope"]);

export type HttpDataPlaneClientOptions = {
  /** DATA_PLANE_URL: the data plane's base URL. */
  baseUrl: string;
  capabilities: CapabilityMinter;
  timeoutMs?: number;
  fetch?: typeof fetch;
};

/**
 * Calls the data plane over HTTP with a capability scoped to exactly the Workdir being
 * checked (`read` only), so the data plane needs no other trust in us than the key.
 */
export function createHttpDataPlaneClient(options: HttpDataPlaneClientOptions): DataPlaneClient {
  const fetchImpl = options.fetch ?? fetch;
  // Relative to the base so a base URL with a path prefix (a proxy route) keeps it.
  const url = new URL(WORKDIR_CHECK_PATH.slice(1), withTrailingSlash(options.baseUrl)).toString();
  return {
    async checkExistingWorkdir(uid, workdirPath, signal) {
      const timed = AbortSignal.any([
        signal,
        AbortSignal.timeout(options.timeoutMs ?? DEFAULT_DATA_PLANE_TIMEOUT_MS),
      ]);
      // `check` only: it proves the directory exists without letting the holder read it.
      const { token } = await options.capabilities.mint(
        { uid, workdirPath, ops: ["check"], ttlSeconds: CHECK_CAPABILITY_TTL_SECONDS },
        timed,
      );
      let response: Response;
      try {
        response = await fetchImpl(url, {
          method: "POST",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({ workdir_path: workdirPath }),
          signal: timed,
        });
      } catch (cause) {
        signal.throwIfAborted();
        throw unreachable(cause);
      }
      return outcomeOf(response.status, await errorReason(response));
    },
  };
}

/** `error.details.reason` of an error body, if any (bounded: the data plane's own body). */
async function errorReason(response: Response): Promise<string | undefined> {
  const text = await response.text().catch(() => "");
  try {
    const reason = (JSON.parse(text) as { error?: { details?: { reason?: unknown } } }).error
      ?.details?.reason;
    return typeof reason === "string" ? reason : undefined;
  } catch {
    return undefined;
  }
}

function outcomeOf(status: number, reason: string | undefined): WorkdirCheck {
  if (status === 200 || status === 204) return "ok";
  if (status === 404) return "not_found";
  if (status === 400) return "invalid";
  if (status === 403 && reason !== undefined && CAPABILITY_REFUSALS.has(reason)) {
    throw new WorkcellError(
      "internal",
      `The data plane refused the check capability (${reason}): functions/ minted the wrong scope.`,
    );
  }
  if (status === 403) return "forbidden";
  if (status === 401) {
    // Our own capability was refused: the data plane holds a different public key.
    throw new WorkcellError(
      "internal",
      "The data plane refused the control plane's capability: CAPABILITY_PRIVATE_KEY and the data plane's CAPABILITY_PUBLIC_KEY are not a pair.",
    );
  }
  throw unreachable(new Error(`data plane answered HTTP ${status}`));
}

function unreachable(cause: unknown): WorkcellError {
  return new WorkcellError(
    "unavailable",
    "The workspace service cannot be reached to check the directory: retry later.",
    { cause },
  );
}

function withTrailingSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}
