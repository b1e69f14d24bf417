import { randomUUID } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pickDataPlaneUrl } from "../../../functions/data-plane/pick-data-plane-url.ts";
import { createDb, type PostgresDb } from "../../../shared/db/client.ts";
import { nodes, sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

// Issue 38 (5): DATA_PLANE_ROUTING=nodes names a live node's own data plane for a
// thread's files: the node holding the thread's sandbox first, never a lost, stopped or
// quiesced one, DATA_PLANE_URL only when no node is live.

const FALLBACK = "https://files.example.test";
const ROUTING = { nodeTtlMs: 30_000 };
const UID = "ursula";

let database: TestDatabase;
let db: PostgresDb;
beforeEach(async () => {
  database = await freshDatabase({ max: 2 });
  db = createDb(database.sql);
});
afterEach(async () => {
  await database?.drop();
});

async function node(id: string, fields: Partial<typeof nodes.$inferInsert> = {}) {
  await db
    .insert(nodes)
    .values({ nodeId: id, dataPlaneUrl: `https://${id}.example.test`, ...fields });
}

describe("pickDataPlaneUrl", () => {
  it("the thread's sandbox node first; another live node once it is lost; the fallback with none", async () => {
    const scope = randomUUID();
    const pick = () => pickDataPlaneUrl(db, { uid: UID, runtimeScopeId: scope }, ROUTING, FALLBACK);
    expect(await pick()).toBe(FALLBACK);

    await node("node-a");
    await node("node-b");
    await db
      .update(nodes)
      .set({ heartbeatAt: sql`now() - interval '5 seconds'` })
      .where(eq(nodes.nodeId, "node-b"));
    // No sandbox: the freshest live node.
    expect(await pick()).toBe("https://node-a.example.test");
    await db.insert(sandboxes).values({
      sandboxId: sandboxId(UID, scope),
      uid: UID,
      runtimeScopeId: scope,
      workdirPath: "projects/p",
      nodeId: "node-b",
      state: "running",
      instanceId: "c",
    });
    expect(await pick()).toBe("https://node-b.example.test");
    // Another user's thread with the same scope id is not this one.
    expect(
      await pickDataPlaneUrl(db, { uid: "other", runtimeScopeId: scope }, ROUTING, FALLBACK),
    ).toBe("https://node-a.example.test");

    // B lost (no heartbeat for the TTL): its sandbox does not keep it named.
    await db
      .update(nodes)
      .set({ heartbeatAt: sql`now() - interval '1 minute'` })
      .where(eq(nodes.nodeId, "node-b"));
    expect(await pick()).toBe("https://node-a.example.test");
    // A quiesced, then stopped: no live active node is left.
    await db.update(nodes).set({ state: "quiesced" }).where(eq(nodes.nodeId, "node-a"));
    expect(await pick()).toBe(FALLBACK);
    await db
      .update(nodes)
      .set({ state: "active", stoppedAt: sql`now()` })
      .where(eq(nodes.nodeId, "node-a"));
    expect(await pick()).toBe(FALLBACK);
  });
});
