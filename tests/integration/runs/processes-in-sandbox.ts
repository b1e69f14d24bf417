import { eq } from "drizzle-orm";
import { sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { type RunWorld, UID } from "./run-harness.ts";

/**
 * A probe for `expect.poll`: how many processes in the thread's sandbox (the one its row
 * names now) have a command line starting with `command` ("0", "1", …), or "gone" once
 * the sandbox refuses the exec. Give `command` a duration no other test uses, so `ps`
 * finds only the test's own.
 */
export async function processesInSandbox(
  world: RunWorld,
  thread: string,
  command: string,
): Promise<() => Promise<string>> {
  const [row] = await world.db
    .select()
    .from(sandboxes)
    .where(eq(sandboxes.sandboxId, sandboxId(UID, thread)));
  if (!row?.instanceId) throw new Error("no sandbox row");
  const ref = {
    instanceId: row.instanceId,
    sandboxId: row.sandboxId,
    generation: row.generation,
  };
  return async () => {
    const out = await world.driver.exec(
      ref,
      { cmd: ["/bin/sh", "-c", `ps -o args | grep -c '^${command}' || true`] },
      AbortSignal.timeout(10_000),
    );
    return out.ok ? out.result.stdout.bytes.toString("utf8").trim() : "gone";
  };
}
