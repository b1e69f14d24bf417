import {
  CHECKPOINT_HOST_PATH,
  type CheckpointHostRequest,
  checkpointHostResponseSchema,
} from "../../shared/contracts/checkpoint.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { CapabilityMinter } from "../capability/capability-minter.ts";
import {
  CAPABILITY_REFUSALS,
  createDataPlaneHttp,
  deadlineOf,
  errorBodyOf,
  errorReasonOf,
  KEY_PAIR_MISMATCH,
  parseJson,
} from "../data-plane/data-plane-http.ts";
import type { RequestOrigin } from "../data-plane/request-origin.ts";

/** A checkpoint copies the whole Workdir: minutes for a large one on a copy-mode node. */
export const DEFAULT_CHECKPOINT_TIMEOUT_MS = 10 * 60_000;
const CAPABILITY_TTL_SECONDS = 60;

export type CheckpointHostAnswer = ReturnType<typeof checkpointHostResponseSchema.parse>;

/** functions/'s side of `POST /internal/v1/checkpoints` (agent-host/checkpoints/). */
export interface CheckpointHost {
  call(
    target: { uid: string; workdirPath: string; baseUrl: string },
    body: Omit<CheckpointHostRequest, "workdir_path">,
    signal: AbortSignal,
    origin?: RequestOrigin,
  ): Promise<CheckpointHostAnswer>;
}

/**
 * Calls the node's data plane with a capability for exactly the thread's Workdir and the
 * `checkpoint` op. A refusal of the data plane (quota, not found, a missing Workdir) comes
 * back as the same WorkcellError; an unreachable node is `unavailable`, and then nothing is
 * known about whether the checkpoint was taken (the list says).
 */
export function createHttpCheckpointHost(options: {
  capabilities: CapabilityMinter;
  timeoutMs?: number;
  fetch?: typeof fetch;
}): CheckpointHost {
  return {
    async call(target, body, signal, origin) {
      const http = createDataPlaneHttp({
        baseUrl: target.baseUrl,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      });
      const timed = deadlineOf(signal, options.timeoutMs ?? DEFAULT_CHECKPOINT_TIMEOUT_MS);
      const { token } = await options.capabilities.mint(
        {
          uid: target.uid,
          workdirPath: target.workdirPath,
          ops: ["checkpoint"],
          ttlSeconds: CAPABILITY_TTL_SECONDS,
        },
        timed,
      );
      const answer = await http.request({
        path: CHECKPOINT_HOST_PATH,
        method: "POST",
        token,
        body: { ...body, workdir_path: target.workdirPath },
        signal: timed,
        callerSignal: signal,
        purpose: `to ${body.action} a checkpoint`,
        ...(origin === undefined ? {} : { origin }),
      });
      if (answer.status === 200 || answer.status === 201) {
        const parsed = checkpointHostResponseSchema.safeParse(parseJson(answer.text));
        if (parsed.success) return parsed.data;
        throw new WorkcellError(
          "internal",
          "The data plane answered with an unexpected body: its version does not match functions/.",
        );
      }
      const error = errorBodyOf(answer.text);
      if (error === undefined) {
        throw new WorkcellError(
          "unavailable",
          "The data plane did not answer the checkpoint call: try again.",
          {
            details: { status: answer.status },
          },
        );
      }
      if (error.code === "forbidden" && CAPABILITY_REFUSALS.has(errorReasonOf(error) ?? "")) {
        throw new WorkcellError("internal", KEY_PAIR_MISMATCH);
      }
      throw new WorkcellError(
        error.code,
        error.message,
        error.details === undefined ? {} : { details: error.details },
      );
    },
  };
}
