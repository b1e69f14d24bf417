import { beforeAll, describe, expect, test } from "vitest";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { DEFAULT_USER_LIMITS } from "../../../shared/limits/user-limits.ts";
import { BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// PUT/GET /v1/admin/users/{uid}/limits, and the quota they set travelling in the files
// capability to the real data plane, which enforces it (docs/decisions/0017).

const h = functionsHarnessForFile();
let admin: Record<string, string>;

beforeAll(async () => {
  admin = { authorization: `Bearer ${await h.adminToken("root")}` };
});

const limitsPath = (uid: string) => `/v1/admin/users/${encodeURIComponent(uid)}/limits`;

async function upload(thread: Thread, uid: string, name: string, bytes: number) {
  const access = await jsonOf<{ base_url: string; token: string }>(
    await h.call("POST", `/v1/threads/${thread.thread_id}/files/access`, {
      uid,
      body: { ops: ["write", "read"] },
    }),
  );
  return fetch(`${access.base_url}/dp/v1/files/content?path=${encodeURIComponent(`/${name}`)}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${access.token}` },
    body: "z".repeat(bytes),
  });
}

describe("admin limits", () => {
  test("GET without overrides answers the defaults; PUT replaces the overrides", async () => {
    const fresh = await h.call("GET", limitsPath("carol"), { headers: admin });
    expect(fresh.status).toBe(200);
    expect(await fresh.json()).toEqual({
      uid: "carol",
      limits: DEFAULT_USER_LIMITS,
      overrides: {},
    });
    const put = await h.call("PUT", limitsPath("carol"), {
      headers: admin,
      body: { workspace_bytes: 5000, max_concurrent_runs: 1 },
    });
    expect(await put.json()).toEqual({
      uid: "carol",
      limits: { ...DEFAULT_USER_LIMITS, workspace_bytes: 5000, max_concurrent_runs: 1 },
      overrides: { workspace_bytes: 5000, max_concurrent_runs: 1 },
    });
    // A field left out of the next PUT goes back to its default.
    await h.call("PUT", limitsPath("carol"), { headers: admin, body: { workspace_inodes: 10 } });
    const after = await jsonOf<{ overrides: object }>(
      await h.call("GET", limitsPath("carol"), { headers: admin }),
    );
    expect(after.overrides).toEqual({ workspace_inodes: 10 });
  });

  test("max_checkpoints_per_thread is set, answered and reset like the others", async () => {
    const put = await h.call("PUT", limitsPath("carl"), {
      headers: admin,
      body: { max_checkpoints_per_thread: 3 },
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({
      uid: "carl",
      limits: { ...DEFAULT_USER_LIMITS, max_checkpoints_per_thread: 3 },
      overrides: { max_checkpoints_per_thread: 3 },
    });
    expect(DEFAULT_USER_LIMITS.max_checkpoints_per_thread).toBe(20);
    await h.call("PUT", limitsPath("carl"), { headers: admin, body: {} });
    const reset = await jsonOf<{ limits: { max_checkpoints_per_thread: number } }>(
      await h.call("GET", limitsPath("carl"), { headers: admin }),
    );
    expect(reset.limits.max_checkpoints_per_thread).toBe(20);
  });

  test("non-admins are refused (before the body), and bad bodies are 400", async () => {
    const before = await jsonOf<object>(
      await h.call("GET", limitsPath("dave"), { headers: admin }),
    );
    const asUser = await h.call("PUT", limitsPath("dave"), { body: { workspace_bytes: 1 } });
    expect(asUser.status).toBe(403);
    expect((await h.call("GET", limitsPath("dave"))).status).toBe(403);
    for (const body of [
      { workspace_bytes: -1 },
      { workspace_bytes: 1.5 },
      { other: 1 },
      { max_checkpoints_per_thread: 0 },
      { max_checkpoints_per_thread: 1001 },
    ]) {
      expect((await h.call("PUT", limitsPath("dave"), { headers: admin, body })).status).toBe(400);
    }
    expect(
      await jsonOf<object>(await h.call("GET", limitsPath("dave"), { headers: admin })),
    ).toEqual(before);
  });

  test("the quota an admin sets holds on the data plane; raising it lets the write in; others unaffected", async () => {
    await h.call("PUT", limitsPath("erin"), { headers: admin, body: { workspace_bytes: 1000 } });
    const thread = await jsonOf<Thread>(
      await h.call("POST", "/v1/threads", { uid: "erin", body: {} }),
    );
    expect((await upload(thread, "erin", "a.txt", 800)).status).toBe(201);
    const over = await upload(thread, "erin", "b.txt", 800);
    expect(over.status).toBe(507);
    expect((await jsonOf<ErrorJson>(over)).error.code).toBe("quota_exceeded");

    const bobThread = await jsonOf<Thread>(
      await h.call("POST", "/v1/threads", { uid: BOB, body: {} }),
    );
    expect((await upload(bobThread, BOB, "b.txt", 800)).status).toBe(201);

    await h.call("PUT", limitsPath("erin"), { headers: admin, body: { workspace_bytes: 5000 } });
    expect((await upload(thread, "erin", "b.txt", 800)).status).toBe(201);
  });
});
