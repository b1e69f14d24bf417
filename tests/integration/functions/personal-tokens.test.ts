import { sql } from "drizzle-orm";
import { describe, expect, test } from "vitest";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { captureLogs } from "../../support/log-capture.ts";
import { BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// Personal access tokens (docs/api.md "Personal access tokens", decision 0097) through the whole
// app on real PostgreSQL: scopes on every route, revocation and expiry on the very next
// request, no admin scope from a non-admin, and the token nowhere but in its one answer.

const logs = captureLogs("debug");
const h = functionsHarnessForFile({ logger: logs.logger });

type Created = { token_id: string; token: string; scopes: string[]; expires_at: string | null };
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** Every token and secret handed out here: none may appear in a log line or a table. */
const handedOut: string[] = [];

async function createToken(body: object, uid?: string, admin = false): Promise<Created> {
  const headers = admin ? bearer(await h.adminToken(uid ?? "root")) : undefined;
  const res = await h.call("POST", "/v1/tokens", {
    body,
    ...(uid === undefined ? {} : { uid }),
    ...(headers === undefined ? {} : { headers }),
  });
  expect(res.status).toBe(201);
  const created = await jsonOf<Created>(res);
  handedOut.push(created.token, created.token.slice(-43));
  return created;
}

async function thread(uid = "alice"): Promise<Thread> {
  const res = await h.call("POST", "/v1/threads", { uid, body: {} });
  expect(res.status).toBe(201);
  return jsonOf<Thread>(res);
}

async function refusal(res: Response, status: number): Promise<ErrorJson> {
  expect(res.status).toBe(status);
  return jsonOf<ErrorJson>(res);
}

describe("personal access tokens", () => {
  test("created once with the wct_ prefix; listed without the secret; the table holds only a hash", async () => {
    const created = await createToken({ name: "ci", scopes: ["runs"], expires_in_days: 30 });
    expect(created.token).toMatch(/^wct_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    expect(created.token).toContain(created.token_id.replaceAll("-", ""));
    expect(Date.parse(created.expires_at ?? "")).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    const list = await jsonOf<{ items: object[] }>(await h.call("GET", "/v1/tokens"));
    expect(list.items).toContainEqual(
      expect.objectContaining({ token_id: created.token_id, name: "ci", scopes: ["runs"] }),
    );
    expect(JSON.stringify(list)).not.toContain(created.token.slice(-43));
    const rows = await h.db.execute(sql`select * from personal_access_tokens`);
    expect(JSON.stringify(rows)).not.toContain(created.token.slice(-43));
    // Another user's list does not show it.
    const bobs = await jsonOf<{ items: { token_id: string }[] }>(
      await h.call("GET", "/v1/tokens", { uid: BOB }),
    );
    expect(bobs.items.map((t) => t.token_id)).not.toContain(created.token_id);
  });

  test("a PAT works within its scopes and gets 403 outside them, before anything is done", async () => {
    const t = await thread();
    const runsOnly = await createToken({ name: "runs only", scopes: ["runs"] });
    const ok = await h.call("GET", `/v1/threads/${t.thread_id}`, {
      headers: bearer(runsOnly.token),
    });
    expect(ok.status).toBe(200);
    const noFiles = await refusal(
      await h.call("POST", `/v1/threads/${t.thread_id}/files/access`, {
        headers: bearer(runsOnly.token),
        body: { ops: ["read"] },
      }),
      403,
    );
    expect(noFiles.error.details).toMatchObject({ reason: "scope_required", scope: "files" });
    await refusal(
      await h.call("GET", "/v1/admin/users/x/limits", { headers: bearer(runsOnly.token) }),
      403,
    );
    // Tokens are managed with a sign-in token only: a PAT cannot mint another.
    const before = await h.db.execute(sql`select count(*)::int as n from personal_access_tokens`);
    const minted = await refusal(
      await h.call("POST", "/v1/tokens", {
        headers: bearer(runsOnly.token),
        body: { name: "escalate", scopes: ["runs", "files"] },
      }),
      403,
    );
    expect(minted.error.details).toMatchObject({ reason: "sign_in_required" });
    const after = await h.db.execute(sql`select count(*)::int as n from personal_access_tokens`);
    expect(after).toEqual(before);

    const filesOnly = await createToken({ name: "files only", scopes: ["files"] });
    const access = await h.call("POST", `/v1/threads/${t.thread_id}/files/access`, {
      headers: bearer(filesOnly.token),
      body: { ops: ["read"] },
    });
    expect(access.status).toBe(200);
    await refusal(await h.call("GET", "/v1/threads", { headers: bearer(filesOnly.token) }), 403);
    // The PAT is alice's: bob's thread is as unknown to it as to alice.
    const bobs = await thread(BOB);
    await refusal(
      await h.call("GET", `/v1/threads/${bobs.thread_id}`, { headers: bearer(runsOnly.token) }),
      404,
    );
  });

  test("admin scope: refused to a non-admin (nothing stored), granted by an admin and enforced", async () => {
    const before = await h.db.execute(sql`select count(*)::int as n from personal_access_tokens`);
    const refused = await refusal(
      await h.call("POST", "/v1/tokens", { body: { name: "sneaky", scopes: ["admin"] } }),
      403,
    );
    expect(refused.error.details).toMatchObject({ reason: "admin_required" });
    expect(await h.db.execute(sql`select count(*)::int as n from personal_access_tokens`)).toEqual(
      before,
    );
    const admin = await createToken({ name: "ops", scopes: ["admin"] }, "root", true);
    const limits = await h.call("GET", "/v1/admin/users/x/limits", {
      headers: bearer(admin.token),
    });
    expect(limits.status).toBe(200);
    // An admin's PAT without the admin scope is no admin.
    const plain = await createToken({ name: "plain" }, "root", true);
    expect(plain.scopes).toEqual(["runs", "files"]);
    await refusal(
      await h.call("GET", "/v1/admin/users/x/limits", { headers: bearer(plain.token) }),
      403,
    );
  });

  test("revoked: 401 on the very next request; another user cannot revoke it", async () => {
    const created = await createToken({ name: "to revoke", scopes: ["runs"] });
    const use = () => h.call("GET", "/v1/threads", { headers: bearer(created.token) });
    expect((await use()).status).toBe(200);
    await refusal(await h.call("DELETE", `/v1/tokens/${created.token_id}`, { uid: BOB }), 404);
    expect((await use()).status).toBe(200);
    const revoked = await h.call("DELETE", `/v1/tokens/${created.token_id}`);
    expect(revoked.status).toBe(204);
    const refused = await refusal(await use(), 401);
    expect(JSON.stringify(refused)).not.toContain(created.token.slice(-43));
    const listed = await jsonOf<{ items: { token_id: string; revoked_at: string | null }[] }>(
      await h.call("GET", "/v1/tokens"),
    );
    expect(listed.items.find((t) => t.token_id === created.token_id)?.revoked_at).not.toBeNull();
  });

  test("expired: 401 on the next request; last_used_at records a use; a wrong secret is 401", async () => {
    const created = await createToken({ name: "short", scopes: ["runs"], expires_in_days: 1 });
    const use = () => h.call("GET", "/v1/threads", { headers: bearer(created.token) });
    expect((await use()).status).toBe(200);
    const [row] = (await h.db.execute(
      sql`select last_used_at from personal_access_tokens where token_id = ${created.token_id}`,
    )) as unknown as { last_used_at: Date | null }[];
    expect(row?.last_used_at).not.toBeNull();
    // A day passes: the row's expiry is moved into the past (the clock the check reads).
    await h.db.execute(
      sql`update personal_access_tokens set expires_at = now() - interval '1 second' where token_id = ${created.token_id}`,
    );
    await refusal(await use(), 401);

    const other = await createToken({ name: "guessed", scopes: ["runs"] });
    const wrong = `${other.token.slice(0, -43)}${"A".repeat(43)}`;
    await refusal(await h.call("GET", "/v1/threads", { headers: bearer(wrong) }), 401);
    await refusal(await h.call("GET", "/v1/threads", { headers: bearer("wct_nonsense") }), 401);
  });

  test("no token or secret handed out here is in any log line", () => {
    expect(handedOut.length).toBeGreaterThan(10);
    expect(logs.raw.length).toBeGreaterThan(0);
    const all = logs.raw.join("\n");
    for (const secret of handedOut) expect(all).not.toContain(secret);
    // The refusals were logged, with their reason.
    expect(all).toMatch(/personal access token revoked/);
    expect(all).toMatch(/personal access token expired/);
  });
});
