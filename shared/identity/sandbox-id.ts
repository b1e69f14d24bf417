import { createHash } from "node:crypto";
import { WorkcellError } from "../errors/workcell-error.ts";

/** Hex digits kept from the digest: short enough for container names and labels. */
export const SANDBOX_ID_HEX_LENGTH = 12;

/**
 * The sandbox of an execution tree: first 12 hex of sha256(`<uid>:<runtimeScopeId>`)
 * (docs/architecture.md §2). It takes the logical uid, not its dirname, so the id does not
 * change if the dirname rule ever does.
 *
 * A uid may contain `:` (OIDC subjects do), so the scope id must not: then the last `:`
 * of the hashed string always separates the two, and no other (uid, scope) pair can
 * produce the same input.
 */
export function sandboxId(uid: string, runtimeScopeId: string): string {
  if (uid.length === 0) {
    throw new WorkcellError("invalid_request", "sandboxId needs a non-empty uid.", {
      details: { field: "uid" },
    });
  }
  if (runtimeScopeId.length === 0 || runtimeScopeId.includes(":")) {
    throw new WorkcellError(
      "invalid_request",
      "sandboxId needs a runtime_scope_id that is non-empty and contains no ':' (use the root thread id).",
      { details: { field: "runtime_scope_id" } },
    );
  }
  return createHash("sha256")
    .update(`${uid}:${runtimeScopeId}`, "utf8")
    .digest("hex")
    .slice(0, SANDBOX_ID_HEX_LENGTH);
}
