import type { Logger } from "pino";
import type { SandboxManager } from "../sandbox/lifecycle/sandbox-manager.ts";

/** Bound on destroying every sandbox of the node when an operator quiesces it. */
export const QUIESCE_TIMEOUT_MS = 5 * 60_000;
/** Bound on marking the node active again when an operator resumes it. */
export const RESUME_TIMEOUT_MS = 30_000;

/**
 * An operator's quiesce or resume (admin routes write the node row; a heartbeat reads it)
 * carried out by this node's sandbox manager. A failure is logged and retried at the next
 * state change the heartbeat sees; acquires already read the row and refuse meanwhile.
 */
export async function followNodeState(
  manager: SandboxManager | undefined,
  state: "active" | "quiesced",
  logger: Logger,
): Promise<void> {
  if (manager === undefined) return;
  try {
    if (state === "quiesced" && !manager.quiesced) {
      const { destroyed } = await manager.quiesce(AbortSignal.timeout(QUIESCE_TIMEOUT_MS));
      logger.info({ destroyed: destroyed.length }, "node quiesced by an operator");
    } else if (state === "active" && manager.quiesced) {
      await manager.resume(AbortSignal.timeout(RESUME_TIMEOUT_MS));
      logger.info("node resumed by an operator");
    }
  } catch (error) {
    logger.error({ err: error, state }, "could not follow the node's state");
  }
}
