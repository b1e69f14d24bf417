import { z } from "zod";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { CapabilityMinter, ServiceCapabilityMinter } from "../capability/capability-minter.ts";
import type { DataPlaneClient, WorkdirCheck } from "./data-plane-client.ts";
import {
  CAPABILITY_REFUSALS,
  createDataPlaneHttp,
  deadlineOf,
  errorBodyOf,
  errorReasonOf,
  KEY_PAIR_MISMATCH,
  parseJson,
  serviceRefusalOf,
} from "./data-plane-http.ts";

/**
 * Internal endpoint of the agent-host data plane (agent-host/data-plane/routes/
 * internal-routes.ts). Spelled out here rather than imported: functions/ must not bundle
 * agent-host code (it runs on Workers), and the integration tests call the real data
 * plane, so a drift fails them.
 */
export const WORKDIR_CHECK_PATH = "/internal/v1/workdirs/check";
/** agent-host/data-plane/routes/usage-internal-route.ts (same reasons as above). */
export const WORKSPACE_USAGE_PATH = "/internal/v1/usage";
/** The check is one directory walk; a data plane slower than this counts as down. */
export const DEFAULT_DATA_PLANE_TIMEOUT_MS = 5_000;
/** The check's capability is used at once, by us: it needs to live only seconds. */
export const CHECK_CAPABILITY_TTL_SECONDS = 30;

const usageResponseSchema = z.object({
  workspace_bytes: z.number().int().nonnegative(),
  workspace_inodes: z.number().int().nonnegative(),
});
export type HttpDataPlaneClientOptions = {
  /** DATA_PLANE_URL: the data plane's base URL. */
  baseUrl: string;
  /** Workdir capabilities for the check, a service capability for the usage read. */
  capabilities: CapabilityMinter & ServiceCapabilityMinter;
  /** Per call (the check is one directory walk, the usage read at most one workspace walk). */
  timeoutMs?: number;
  fetch?: typeof fetch;
};

/**
 * Calls the data plane over HTTP with a capability scoped to exactly the Workdir being
 * checked (`check` only), or to one uid's usage (a service capability, `workspace.usage`
 * only), so the data plane needs no other trust in us than the key.
 */
export function createHttpDataPlaneClient(options: HttpDataPlaneClientOptions): DataPlaneClient {
  const http = createDataPlaneHttp(options);
  return {
    async checkExistingWorkdir(uid, workdirPath, signal, origin) {
      const timed = deadlineOf(signal, options.timeoutMs ?? DEFAULT_DATA_PLANE_TIMEOUT_MS);
      // `check` only: it proves the directory exists without letting the holder read it.
      const { token } = await options.capabilities.mint(
        { uid, workdirPath, ops: ["check"], ttlSeconds: CHECK_CAPABILITY_TTL_SECONDS },
        timed,
      );
      const answer = await http.request({
        path: WORKDIR_CHECK_PATH,
        method: "POST",
        token,
        body: { workdir_path: workdirPath },
        signal: timed,
        callerSignal: signal,
        purpose: "to check the directory",
        ...(origin === undefined ? {} : { origin }),
      });
      return outcomeOf(answer.status, errorReasonOf(errorBodyOf(answer.text)));
    },

    async workspaceUsage(uid, signal, origin) {
      const timed = deadlineOf(signal, options.timeoutMs ?? DEFAULT_DATA_PLANE_TIMEOUT_MS);
      const { token } = await options.capabilities.mintService(
        { ops: ["workspace.usage"], uid, ttlSeconds: CHECK_CAPABILITY_TTL_SECONDS },
        timed,
      );
      const { status, text } = await http.request({
        path: WORKSPACE_USAGE_PATH,
        method: "POST",
        token,
        body: { uid },
        signal: timed,
        callerSignal: signal,
        purpose: "to measure the workspace",
        ...(origin === undefined ? {} : { origin }),
      });
      if (status !== 200) throw serviceRefusalOf(WORKSPACE_USAGE_PATH, status, text);
      const parsed = usageResponseSchema.safeParse(parseJson(text));
      if (!parsed.success) {
        throw new WorkcellError(
          "internal",
          `The agent-host answered ${WORKSPACE_USAGE_PATH} with an unexpected body: its version does not match functions/.`,
        );
      }
      return {
        workspaceBytes: parsed.data.workspace_bytes,
        workspaceInodes: parsed.data.workspace_inodes,
      };
    },
  };
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
  // Our own capability was refused: the data plane holds a different public key.
  if (status === 401) throw new WorkcellError("internal", KEY_PAIR_MISMATCH);
  throw new WorkcellError(
    "unavailable",
    `The workspace service could not check the directory (HTTP ${status}): retry later.`,
  );
}
