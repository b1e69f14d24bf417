import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeJwt, exportJWK, generateKeyPair } from "jose";
import { describe, expect, test } from "vitest";
import {
  createThreadRevocations,
  DEFAULT_ACTIVE_THREAD_TTL_MS,
} from "../../../agent-host/data-plane/index.ts";
import { mintCapability } from "../../../shared/capability/mint-capability.ts";
import type { FilesAccessResponse } from "../../../shared/contracts/files-access.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { createDb } from "../../../shared/db/client.ts";
import { freshDataRoot } from "../../support/data-root.ts";
import { freshDatabase } from "../../support/postgres.ts";
import { startTestDataPlane } from "./support/data-plane-server.ts";
import { ALICE, BOB, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// #13 / docs/decisions/0051: a capability handed out for a thread stops working once the
// thread is deleted (within the revocation cache's bound), on the real data plane over
// real Postgres; other threads of the same Workdir and other tenants are unaffected.

let clock = 1_000_000;

const h = functionsHarnessForFile({ revocationClock: () => clock });

async function newThread(uid: string, body: Record<string, unknown> = {}): Promise<Thread> {
  const res = await h.call("POST", "/v1/threads", { body, uid });
  expect(res.status).toBe(201);
  return jsonOf<Thread>(res);
}

async function grant(thread: Thread, uid: string): Promise<FilesAccessResponse> {
  const res = await h.call("POST", `/v1/threads/${thread.thread_id}/files/access`, {
    body: { ops: ["read", "write", "delete"] },
    uid,
  });
  expect(res.status).toBe(200);
  return jsonOf<FilesAccessResponse>(res);
}

function dp(g: FilesAccessResponse, method: string, path: string, body?: string) {
  return fetch(`${g.base_url}${path}`, {
    method,
    headers: { authorization: `Bearer ${g.token}` },
    ...(body === undefined ? {} : { body }),
  });
}

async function errorOf(res: Response): Promise<{ code: string; details?: { reason?: string } }> {
  return ((await res.json()) as { error: { code: string; details?: { reason?: string } } }).error;
}

describe("capability revocation on thread deletion", () => {
  test("after DELETE of the thread its capability reads and writes nothing; a sibling thread's and another user's still work", async () => {
    const doomed = await newThread(ALICE);
    const sibling = await newThread(ALICE, { project_id: doomed.project_id });
    expect(sibling.workdir_path).toBe(doomed.workdir_path);
    const bobs = await newThread(BOB);
    const [old, kept, bob] = [
      await grant(doomed, ALICE),
      await grant(sibling, ALICE),
      await grant(bobs, BOB),
    ];
    expect(decodeJwt(old.token).thread_id).toBe(doomed.thread_id);

    expect((await dp(old, "PUT", "/dp/v1/files/content?path=/before.txt", "one")).status).toBe(201);
    expect((await h.call("DELETE", `/v1/threads/${doomed.thread_id}`)).status).toBe(204);
    // The data plane may reuse an "active" answer for DEFAULT_ACTIVE_THREAD_TTL_MS: past it.
    clock += DEFAULT_ACTIVE_THREAD_TTL_MS + 1;

    const refused = [
      await dp(old, "GET", "/dp/v1/files/content?path=/before.txt"),
      await dp(old, "PUT", "/dp/v1/files/content?path=/after.txt", "two"),
      await dp(old, "GET", "/dp/v1/files?path=/"),
      await dp(old, "DELETE", "/dp/v1/files?path=/before.txt"),
      await dp(old, "POST", "/dp/v1/dirs?path=/made"),
    ];
    for (const res of refused) {
      expect(res.status).toBe(401);
      expect(await errorOf(res)).toMatchObject({
        code: "unauthenticated",
        details: { reason: "capability_revoked" },
      });
    }
    // Nothing happened: no new file, no new dir, the old file intact.
    const workdir = join(h.dataRoot, "users", ALICE, "workspace", doomed.workdir_path);
    expect(existsSync(join(workdir, "after.txt"))).toBe(false);
    expect(existsSync(join(workdir, "made"))).toBe(false);
    expect(readFileSync(join(workdir, "before.txt"), "utf8")).toBe("one");

    // The sibling thread's capability opens the same Workdir and keeps working.
    const read = await dp(kept, "GET", "/dp/v1/files/content?path=/before.txt");
    expect(read.status).toBe(200);
    expect(await read.text()).toBe("one");
    expect((await dp(kept, "PUT", "/dp/v1/files/content?path=/sibling.txt", "s")).status).toBe(201);
    // Another tenant: unaffected.
    expect((await dp(bob, "PUT", "/dp/v1/files/content?path=/bob.txt", "b")).status).toBe(201);
    // And the API hands out no new capability for the deleted thread.
    const again = await h.call("POST", `/v1/threads/${doomed.thread_id}/files/access`, {
      body: { ops: ["read"] },
    });
    expect(again.status).toBe(404);
  });
});

describe("createThreadRevocations over real Postgres", () => {
  test("an active answer is reused only within its bound; a deletion is seen after it and kept", async () => {
    const thread = await newThread(ALICE);
    let now = 0;
    const revocations = createThreadRevocations({ db: h.db, activeTtlMs: 1_000, now: () => now });
    const signal = AbortSignal.timeout(10_000);
    expect(await revocations.isRevoked(ALICE, thread.thread_id, signal)).toBe(false);
    expect((await h.call("DELETE", `/v1/threads/${thread.thread_id}`)).status).toBe(204);
    now = 1_000;
    // Within the bound the cached answer stands: the documented window (decision 0051).
    expect(await revocations.isRevoked(ALICE, thread.thread_id, signal)).toBe(false);
    now = 1_001;
    expect(await revocations.isRevoked(ALICE, thread.thread_id, signal)).toBe(true);
    now = 1_000_000;
    expect(await revocations.isRevoked(ALICE, thread.thread_id, signal)).toBe(true);
  });

  test("an unknown thread, and a thread of another uid, count as revoked", async () => {
    const revocations = createThreadRevocations({ db: h.db });
    const signal = AbortSignal.timeout(10_000);
    const bobs = await newThread(BOB);
    expect(await revocations.isRevoked(ALICE, crypto.randomUUID(), signal)).toBe(true);
    expect(await revocations.isRevoked(ALICE, bobs.thread_id, signal)).toBe(true);
    expect(await revocations.isRevoked(BOB, bobs.thread_id, signal)).toBe(false);
  });

  test("Postgres not answering rejects (the data plane fails closed) and is not cached", async () => {
    const database = await freshDatabase({ max: 1 });
    const revocations = createThreadRevocations({ db: createDb(database.sql) });
    await database.drop();
    await expect(
      revocations.isRevoked(ALICE, crypto.randomUUID(), AbortSignal.timeout(10_000)),
    ).rejects.toThrow();
  });
});

test("the data plane answers 503 and writes nothing when Postgres cannot say whether the thread lives", async () => {
  const database = await freshDatabase({ max: 1 });
  const root = await freshDataRoot();
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  const plane = await startTestDataPlane({
    dataRoot: root.path,
    publicJwk: await exportJWK(publicKey),
    revocations: createThreadRevocations({ db: createDb(database.sql) }),
  });
  try {
    await database.drop();
    const { token } = await mintCapability({
      privateKey,
      uid: ALICE,
      workdirPath: "code/x",
      ops: ["write"],
      threadId: crypto.randomUUID(),
    });
    const res = await fetch(`${plane.url}/dp/v1/files/content?path=/f.txt`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}` },
      body: "x",
    });
    expect(res.status).toBe(503);
    expect((await errorOf(res)).code).toBe("unavailable");
    expect(existsSync(join(root.path, "users", ALICE, "workspace", "code", "x", "f.txt"))).toBe(
      false,
    );
  } finally {
    await plane.close();
    await root.remove();
  }
});
