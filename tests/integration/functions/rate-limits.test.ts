import { describe, expect, test } from "vitest";
import { createApp } from "../../../functions/app.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// requests_per_minute (a Postgres token bucket shared by every instance) and the cap on
// open event streams per uid (docs/decisions/0037), over real Postgres.

const h = functionsHarnessForFile({ limits: { maxEventStreamsPerUid: 2 } });

async function setRpm(uid: string, rpm: number): Promise<void> {
  const res = await h.call("PUT", `/v1/admin/users/${uid}/limits`, {
    admin: true,
    uid: "root",
    body: { requests_per_minute: rpm },
  });
  expect(res.status).toBe(200);
}

async function threadCount(uid: string): Promise<number> {
  const [row] = await h.database.sql<
    { n: number }[]
  >`select count(*)::int as n from conversations where uid = ${uid}`;
  return row?.n ?? -1;
}

describe("requests_per_minute", () => {
  test("a burst past the limit gets 429 with Retry-After and changes nothing; another user is unaffected", async () => {
    const uid = "burst-user";
    await setRpm(uid, 5);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await h.call("GET", "/v1/threads", { uid })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200]);

    const before = await threadCount(uid);
    const refused = await h.call("POST", "/v1/threads", { uid, body: {} });
    expect(refused.status).toBe(429);
    // 5 per minute refill one token every 12 s.
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(12);
    expect((await jsonOf<ErrorJson>(refused)).error).toMatchObject({
      code: "rate_limited",
      details: { reason: "requests_per_minute" },
    });
    expect(await threadCount(uid)).toBe(before);

    // Another user (default limit) is not affected.
    expect((await h.call("GET", "/v1/threads", { uid: BOB })).status).toBe(200);
    // The bucket is shared by instances: a second app (its own limiter) on the same
    // database refuses too.
    const secondInstance = createApp(h.deps);
    const second = await secondInstance.request("/v1/threads", {
      headers: { authorization: `Bearer ${await h.token(uid)}` },
    });
    expect(second.status).toBe(429);

    // An admin raising the limit lets the user through once the bucket has refilled;
    // simulated by moving the refill point back a minute (no sleeping in tests).
    await setRpm(uid, 600);
    await h.database.sql`update api_rate_buckets
      set refilled_at = refilled_at - interval '1 minute' where uid = ${uid}`;
    expect((await h.call("GET", "/v1/threads", { uid })).status).toBe(200);
  });

  test("concurrent requests never take more than the bucket holds", async () => {
    const uid = "concurrent-user";
    await setRpm(uid, 10);
    const results = await Promise.all(
      Array.from({ length: 30 }, () => h.call("GET", "/v1/threads", { uid })),
    );
    const ok = results.filter((r) => r.status === 200).length;
    // Refill during the burst may add a token or two, never twenty.
    expect(ok).toBeGreaterThanOrEqual(10);
    expect(ok).toBeLessThanOrEqual(12);
    expect(results.filter((r) => r.status === 429).length).toBe(30 - ok);
  });

  test("a concurrent burst well under the limit all passes (one take from Postgres at a time)", async () => {
    const uid = "burst-user";
    await setRpm(uid, 600);
    const results = await Promise.all(
      Array.from({ length: 100 }, () => h.call("GET", "/v1/threads", { uid })),
    );
    // Before: every request that found the lease empty took rpm/20 tokens at once, and
    // 50 concurrent requests drained a 600 bucket.
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 100 }, () => 200));
  });
});

describe("open event streams per uid", () => {
  test("past the cap a stream is 429; closing one frees its slot; other users are unaffected", async () => {
    const uid = "stream-user";
    const run = (
      await jsonOf<{ run: Run }>(await h.call("POST", "/v1/runs", { uid, body: { input: "x" } }))
    ).run;
    const path = `/v1/runs/${run.run_id}/events`;
    const first = await h.call("GET", path, { uid });
    const second = await h.call("GET", path, { uid });
    expect([first.status, second.status]).toEqual([200, 200]);

    const third = await h.call("GET", path, { uid });
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).toBe("5");
    expect((await jsonOf<ErrorJson>(third)).error.details).toMatchObject({
      reason: "event_streams_limit",
      max_event_streams: 2,
    });

    // Bob's streams are counted apart.
    const bobRun = (
      await jsonOf<{ run: Run }>(
        await h.call("POST", "/v1/runs", { uid: BOB, body: { input: "x" } }),
      )
    ).run;
    const bobStream = await h.call("GET", `/v1/runs/${bobRun.run_id}/events`, { uid: BOB });
    expect(bobStream.status).toBe(200);
    await bobStream.body?.cancel();

    // The client goes away: its slot is released (asynchronously) and a new stream opens.
    await first.body?.cancel();
    const deadline = performance.now() + 10_000;
    let fourth = await h.call("GET", path, { uid });
    while (fourth.status === 429 && performance.now() < deadline) {
      await fourth.body?.cancel();
      fourth = await h.call("GET", path, { uid });
    }
    expect(fourth.status).toBe(200);
    await fourth.body?.cancel();
    await second.body?.cancel();
  });
});
