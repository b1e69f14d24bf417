import { afterEach, beforeEach } from "vitest";
import type { ResolverKind, WorkspaceLimits } from "../../../agent-host/workspace/index.ts";
import { setupWorkspace, type WorkspaceEnv } from "./harness.ts";

/**
 * Gives each test of the enclosing describe a fresh workspace: set up in beforeEach, and in
 * afterEach checked (outside/ must be byte-for-byte unchanged) then removed. Call it inside
 * describe; the returned function gives the current test's workspace, so no state lives at
 * module level.
 */
export function workspacePerTest(
  kind: ResolverKind,
  limits: Partial<WorkspaceLimits> = {},
): () => WorkspaceEnv {
  let current: WorkspaceEnv | undefined;
  beforeEach(async () => {
    current = await setupWorkspace(kind, limits);
  });
  afterEach(async () => {
    const env = current;
    current = undefined;
    await env?.finish();
  });
  return () => {
    if (current === undefined) throw new Error("the workspace exists only while a test runs");
    return current;
  };
}
