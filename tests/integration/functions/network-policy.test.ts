import { beforeAll, describe, expect, test } from "vitest";
import { createApp } from "../../../functions/app.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// The network policy API (docs/api.md "Network policy and secrets", docs/decisions/0115): an
// admin's per-user ceiling, the deployment default, a run's narrowing, a run's audit rows.

const h = functionsHarnessForFile();
let admin: Record<string, string>;

beforeAll(async () => {
  admin = { authorization: `Bearer ${await h.adminToken("root")}` };
});

const networkPath = (uid: string) => `/v1/admin/users/${encodeURIComponent(uid)}/network`;

async function runCount(uid: string): Promise<number> {
  const [row] = await h.database.sql<{ n: number }[]>`
    select count(*)::int as n from agent_runs where uid = ${uid}`;
  return row?.n ?? -1;
}

async function submit(uid: string, network?: object) {
  const thread = await jsonOf<Thread>(await h.call("POST", "/v1/threads", { uid, body: {} }));
  return h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
    uid,
    body: { input: "pip install", ...(network === undefined ? {} : { agent: { network } }) },
  });
}

describe("network policy", () => {
  test("nobody configured anything: every user is `none`, and a run asking for a host is 422 with nothing written", async () => {
    const mine = await h.call("GET", "/v1/network", { uid: "nora" });
    expect(await mine.json()).toEqual({
      policy: { mode: "none", allow: [] },
      changed_by: "admin",
    });
    const asAdmin = await h.call("GET", networkPath("nora"), { headers: admin });
    expect(await asAdmin.json()).toEqual({
      uid: "nora",
      policy: { mode: "none", allow: [] },
      source: "default",
    });
    const before = await runCount("nora");
    const refused = await submit("nora", { allow: ["pypi.org"] });
    expect(refused.status).toBe(422);
    const body = await jsonOf<ErrorJson>(refused);
    expect(body.error.code).toBe("unprocessable");
    expect(body.error.details).toMatchObject({
      reason: "network_not_allowed",
      patterns: ["pypi.org"],
    });
    expect(await runCount("nora")).toBe(before);
  });

  test("an admin sets a ceiling; the user sees it; runs narrow it, never widen it", async () => {
    const put = await h.call("PUT", networkPath("pia"), {
      headers: admin,
      body: { mode: "allowlist", allow: ["PyPI.org", "*.github.com", "pypi.org"] },
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({
      uid: "pia",
      policy: { mode: "allowlist", allow: ["pypi.org", "*.github.com"] },
      source: "user",
    });
    expect(await jsonOf<object>(await h.call("GET", "/v1/network", { uid: "pia" }))).toEqual({
      policy: { mode: "allowlist", allow: ["pypi.org", "*.github.com"] },
      changed_by: "admin",
    });

    const narrowed = await submit("pia", { allow: ["pypi.org", "api.github.com"] });
    expect(narrowed.status).toBe(202);
    const run = await jsonOf<Run>(narrowed);
    const [row] = await h.database.sql<{ agent: unknown }[]>`
      select agent from agent_runs where run_id = ${run.run_id}`;
    expect(row?.agent).toEqual({ network: { allow: ["pypi.org", "api.github.com"] } });

    const before = await runCount("pia");
    for (const allow of [["github.com"], ["pypi.org:8080"], ["evil.test"]]) {
      const res = await submit("pia", { allow });
      expect(res.status, allow[0]).toBe(422);
      expect((await jsonOf<ErrorJson>(res)).error.details).toMatchObject({ patterns: allow });
    }
    // Another user is not covered by pia's ceiling.
    expect((await submit(BOB, { allow: ["pypi.org"] })).status).toBe(422);
    expect(await runCount("pia")).toBe(before);

    // Back to none: stored without patterns, and pia's next narrowing is refused.
    const closed = await h.call("PUT", networkPath("pia"), {
      headers: admin,
      body: { mode: "none", allow: ["pypi.org"] },
    });
    expect(await closed.json()).toMatchObject({ policy: { mode: "none", allow: [] } });
    expect((await submit("pia", { allow: ["pypi.org"] })).status).toBe(422);
  });

  test("bad policies are 400 and change nothing; non-admins are 403", async () => {
    await h.call("PUT", networkPath("quinn"), {
      headers: admin,
      body: { mode: "allowlist", allow: ["pypi.org"] },
    });
    for (const body of [
      { mode: "allowlist", allow: [] },
      { mode: "allowlist", allow: ["10.0.0.0/8"] },
      { mode: "allowlist", allow: ["169.254.169.254"] },
      { mode: "allowlist", allow: ["[::1]:443"] },
      { mode: "open" },
      { mode: "allowlist", allow: ["pypi.org"], extra: 1 },
    ]) {
      const res = await h.call("PUT", networkPath("quinn"), { headers: admin, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const asUser = await h.call("PUT", networkPath("quinn"), {
      uid: "quinn",
      body: { mode: "allowlist", allow: ["evil.test"] },
    });
    expect(asUser.status).toBe(403);
    expect((await h.call("GET", networkPath("quinn"), { uid: "quinn" })).status).toBe(403);
    expect(await jsonOf<object>(await h.call("GET", "/v1/network", { uid: "quinn" }))).toEqual({
      policy: { mode: "allowlist", allow: ["pypi.org"] },
      changed_by: "admin",
    });
    // A run's own narrowing is checked by the same rules (an IP is not a pattern: 400).
    expect((await submit("quinn", { allow: ["10.1.2.3"] })).status).toBe(400);
    expect((await submit("quinn", { allow: [] })).status).toBe(400);
  });

  test("the deployment default applies to users without a policy, and an admin's policy replaces it", async () => {
    const app = createApp({
      ...h.deps,
      networkDefault: { mode: "allowlist", allow: ["pypi.org"] },
    });
    const call = async (method: string, path: string, uid: string, body?: object) =>
      app.request(path, {
        method,
        headers: {
          authorization: `Bearer ${await h.token(uid)}`,
          "content-type": "application/json",
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    expect(await (await call("GET", "/v1/network", "rui")).json()).toEqual({
      policy: { mode: "allowlist", allow: ["pypi.org"] },
      changed_by: "admin",
    });
    const thread = await jsonOf<Thread>(await call("POST", "/v1/threads", "rui", {}));
    const ok = await call("POST", `/v1/threads/${thread.thread_id}/runs`, "rui", {
      input: "x",
      agent: { network: { allow: ["pypi.org"] } },
    });
    expect(ok.status).toBe(202);
    await h.call("PUT", networkPath("rui"), { headers: admin, body: { mode: "none" } });
    const refused = await call("POST", `/v1/threads/${thread.thread_id}/runs`, "rui", {
      input: "x",
      agent: { network: { allow: ["pypi.org"] } },
    });
    expect(refused.status).toBe(422);
  });
});

describe("GET /v1/runs/{id}/network", () => {
  test("the owner reads its run's rows oldest first; another user, an unknown and a malformed id get 404", async () => {
    await h.call("PUT", networkPath("sam"), {
      headers: admin,
      body: { mode: "allowlist", allow: ["allowed.test"] },
    });
    const run = await jsonOf<Run>(await submit("sam"));
    const empty = await h.call("GET", `/v1/runs/${run.run_id}/network`, { uid: "sam" });
    expect(await empty.json()).toEqual({ items: [], truncated: false });
    await h.database.sql`
      insert into network_requests (run_id, uid, host, port, address, protocol, decision, reason,
        bytes_up, bytes_down, duration_ms, started_at)
      values
        (${run.run_id}, 'sam', 'allowed.test', 443, '198.51.100.2', 'connect', 'allowed', null,
          120, 4000, 35, '2026-01-01T00:00:00Z'),
        (${run.run_id}, 'sam', 'denied.test', 443, null, 'connect', 'denied', 'not_in_policy',
          0, 0, 0, '2026-01-01T00:00:01Z')`;
    const listed = await h.call("GET", `/v1/runs/${run.run_id}/network`, { uid: "sam" });
    expect(await listed.json()).toEqual({
      items: [
        {
          host: "allowed.test",
          port: 443,
          address: "198.51.100.2",
          protocol: "connect",
          decision: "allowed",
          reason: null,
          bytes_up: 120,
          bytes_down: 4000,
          duration_ms: 35,
          started_at: "2026-01-01T00:00:00.000Z",
        },
        {
          host: "denied.test",
          port: 443,
          address: null,
          protocol: "connect",
          decision: "denied",
          reason: "not_in_policy",
          bytes_up: 0,
          bytes_down: 0,
          duration_ms: 0,
          started_at: "2026-01-01T00:00:01.000Z",
        },
      ],
      truncated: false,
    });
    for (const [uid, path] of [
      [BOB, `/v1/runs/${run.run_id}/network`],
      ["sam", "/v1/runs/00000000-0000-4000-8000-000000000000/network"],
      ["sam", "/v1/runs/not-a-uuid/network"],
    ] as const) {
      const res = await h.call("GET", path, { uid });
      expect(res.status, `${uid} ${path}`).toBe(404);
      const text = await res.text();
      expect(text).not.toContain("allowed.test");
    }
  });

  test("a row can never name another tenant's run (the run's uid is part of its key)", async () => {
    const run = await jsonOf<Run>(await submit("tess"));
    await expect(
      h.database.sql`
        insert into network_requests (run_id, uid, host, port, protocol, decision, started_at)
        values (${run.run_id}, ${BOB}, 'x.test', 443, 'connect', 'denied', now())`,
    ).rejects.toThrow(/network_requests_run_fk/);
  });
});

describe("SDK", () => {
  test("workcell.network, admin.network / setNetwork and run.network speak these routes", async () => {
    const { Workcell } = await import("../../../sdk/src/index.ts");
    const client = (token: string) =>
      new Workcell({
        baseUrl: "http://workcell.test",
        token,
        fetch: (input, init) => Promise.resolve(h.app.request(new Request(input, init))),
      });
    const adminSdk = client(await h.adminToken("root"));
    const vera = client(await h.token("vera"));
    expect(
      await adminSdk.admin.setNetwork("vera", { mode: "allowlist", allow: ["pypi.org"] }),
    ).toEqual({
      uid: "vera",
      policy: { mode: "allowlist", allow: ["pypi.org"] },
      source: "user",
    });
    expect((await adminSdk.admin.network("vera")).source).toBe("user");
    expect(await vera.network()).toEqual({
      policy: { mode: "allowlist", allow: ["pypi.org"] },
      changed_by: "admin",
    });
    const run = await vera.runs.create("x", { agent: { network: { allow: ["pypi.org"] } } });
    expect(await run.network()).toEqual({ items: [], truncated: false });
    await expect(
      vera.runs.create("x", { agent: { network: { allow: ["evil.test"] } } }),
    ).rejects.toThrow(/outside your network policy/);
  });
});
