import { decodeJwt } from "jose";
import { describe, expect, test } from "vitest";
import type { FilesAccessResponse } from "../../../shared/contracts/files-access.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { ALICE, BOB, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// POST /v1/threads/{id}/files/access: the capability it returns works against the real
// data plane for exactly the thread's Workdir and the operations asked for.

const h = functionsHarnessForFile();

async function access(thread: Thread, ops: string[], uid = ALICE): Promise<Response> {
  return h.call("POST", `/v1/threads/${thread.thread_id}/files/access`, { body: { ops }, uid });
}

async function newThread(uid = ALICE): Promise<Thread> {
  return jsonOf<Thread>(await h.call("POST", "/v1/threads", { body: {}, uid }));
}

describe("POST /v1/threads/{id}/files/access", () => {
  test("a capability scoped to the thread's Workdir, usable on the data plane", async () => {
    const thread = await newThread();
    const res = await access(thread, ["read", "write"]);
    expect(res.status).toBe(200);
    const grant = await jsonOf<FilesAccessResponse>(res);
    expect(grant.base_url).toBe(h.dataPlane.url);
    const claims = decodeJwt(grant.token);
    expect(claims).toMatchObject({
      uid: ALICE,
      workdir_path: thread.workdir_path,
      ops: ["read", "write"],
    });
    expect(new Date(grant.expires_at).getTime()).toBe((claims.exp ?? 0) * 1000);

    const auth = { authorization: `Bearer ${grant.token}` };
    const put = await fetch(`${grant.base_url}/dp/v1/files/content?path=/hello.txt`, {
      method: "PUT",
      headers: auth,
      body: "hi",
    });
    expect(put.status).toBe(201);
    const list = await fetch(`${grant.base_url}/dp/v1/files?path=/`, { headers: auth });
    expect(list.status).toBe(200);
    const names = ((await list.json()) as { items: { name: string }[] }).items.map((i) => i.name);
    expect(names).toContain("hello.txt");
  });

  test("only the operations asked for: a read-only capability cannot write", async () => {
    const thread = await newThread();
    const grant = await jsonOf<FilesAccessResponse>(await access(thread, ["read"]));
    const put = await fetch(`${grant.base_url}/dp/v1/files/content?path=/x.txt`, {
      method: "PUT",
      headers: { authorization: `Bearer ${grant.token}` },
      body: "x",
    });
    expect(put.status).toBe(403);
  });

  test("clients cannot ask for internal operations, nothing, or an operation twice: 400", async () => {
    const thread = await newThread();
    for (const ops of [["check"], ["materialize"], ["import"], [], ["read", "read"], ["admin"]]) {
      expect((await access(thread, ops)).status, JSON.stringify(ops)).toBe(400);
    }
    const noBody = await h.call("POST", `/v1/threads/${thread.thread_id}/files/access`);
    expect(noBody.status).toBe(400);
  });

  test("another user's, a deleted, an unknown and a malformed thread: 404", async () => {
    const bobs = await newThread(BOB);
    expect((await access(bobs, ["read"])).status).toBe(404);
    const gone = await newThread();
    expect((await h.call("DELETE", `/v1/threads/${gone.thread_id}`)).status).toBe(204);
    expect((await access(gone, ["read"])).status).toBe(404);
    for (const id of [crypto.randomUUID(), "nope"]) {
      const res = await h.call("POST", `/v1/threads/${id}/files/access`, {
        body: { ops: ["read"] },
      });
      expect(res.status).toBe(404);
    }
  });
});
