import { readdirSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Run } from "../../../shared/contracts/run.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { requireDocker } from "../../support/docker.ts";
import { pollFor } from "../../support/poll-until.ts";
import {
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import { type ContainerNode, startContainerNode } from "./node-agent-host.ts";

// The accounting mode end to end (docs/decisions/0050): the control plane's admin route
// sets the quota, a real agent-host (as agent-host.ts wires it) runs the shell model in a
// real sandbox. A command takes the workspace over its quota (nothing stops it mid-write
// here); the uid's next run then fails quota_exceeded and runs nothing; another uid runs;
// raising the limit through PUT /v1/admin/users/{uid}/limits lets the next run through.

let h: FunctionsHarness;
let node: ContainerNode | undefined;
const { docker, image } = requireDocker();

beforeAll(async () => {
  h = await startFunctionsHarness({ dbMax: 30 });
  node = await startContainerNode(h, { docker, image });
});
afterAll(async () => {
  await node?.stop();
  await h?.close();
});

async function submit(uid: string, input: string): Promise<string> {
  const res = await h.call("POST", "/v1/runs", { uid, body: { input } });
  expect(res.status).toBe(202);
  return (await jsonOf<{ run: Run }>(res)).run.run_id;
}

async function ended(runId: string) {
  const row = await pollFor(
    async () => (await h.db.select().from(agentRuns).where(eq(agentRuns.runId, runId)))[0],
    (r) => r !== undefined && ["succeeded", "failed", "cancelled"].includes(r.status),
    { what: `run ${runId} to end`, timeoutMs: 90_000, intervalMs: 100 },
  );
  if (row === undefined) throw new Error(`run ${runId} has no row`);
  return row;
}

/** Every file name anywhere in the uid's UserWorkspace (the marker's Workdir is the run's). */
function namesIn(uid: string): string[] {
  const root = join(h.dataRoot, "users", uidDirname(uid), "workspace");
  try {
    return readdirSync(root, { recursive: true, encoding: "utf8" }).map(
      (p) => p.split("/").pop() ?? p,
    );
  } catch {
    return [];
  }
}

const putLimits = (uid: string, body: object) =>
  h.call("PUT", `/v1/admin/users/${uid}/limits`, { admin: true, body });

it("over its quota a uid's next run fails quota_exceeded and runs nothing; others run; raising the limit lets it through", async () => {
  expect((await putLimits("quota-full", { workspace_bytes: 64 * 1024 })).status).toBe(200);
  const filled = await ended(
    await submit("quota-full", "dd if=/dev/zero of=big bs=1024 count=200 2>/dev/null; echo ok"),
  );
  expect(filled.status).toBe("succeeded");
  expect(namesIn("quota-full")).toContain("big");

  const refused = await ended(await submit("quota-full", "touch marker-refused"));
  expect(refused).toMatchObject({ status: "failed", error: { code: "quota_exceeded" } });
  expect(refused.error?.message).toContain("ask an administrator to raise your limits");
  expect(namesIn("quota-full")).not.toContain("marker-refused");

  const other = await ended(await submit("quota-other", "touch marker-other"));
  expect(other.status).toBe("succeeded");
  expect(namesIn("quota-other")).toContain("marker-other");

  expect((await putLimits("quota-full", { workspace_bytes: 1024 * 1024 })).status).toBe(200);
  const through = await ended(await submit("quota-full", "touch marker-through"));
  expect(through.status).toBe("succeeded");
  expect(namesIn("quota-full")).toContain("marker-through");
});
