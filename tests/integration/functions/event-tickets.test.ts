import { describe, expect, test } from "vitest";
import type { Run } from "../../../shared/contracts/run.ts";
import { eventTicketSchema } from "../../../shared/contracts/run-event.ts";
import { BOB, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";
import { eventFrames, readSse } from "./support/sse.ts";

// POST /v1/runs/{id}/events/ticket (docs/api.md "Runs"): a URL that opens one run's event
// stream without an Authorization header, and nothing else. Tickets are signed with the
// capability key, as the entries sign them, so the real data plane of the harness (which
// trusts that key) can be asked to take one too.

/** The tickets' clock: tests move it forward instead of waiting. */
let clockMs = Date.now();

const h = functionsHarnessForFile({ ticketClock: () => new Date(clockMs) });

async function newRun(uid = "alice"): Promise<{ run: Run; thread: { thread_id: string } }> {
  const res = await h.call("POST", "/v1/runs", { body: { input: "x" }, uid });
  return jsonOf(res);
}

async function ticketFor(run: Run, uid = "alice"): Promise<URL> {
  const res = await h.call("POST", `/v1/runs/${run.run_id}/events/ticket`, { uid });
  expect(res.status).toBe(201);
  const body = eventTicketSchema.parse(await res.json());
  const expires = Date.parse(body.expires_at);
  expect(expires).toBeGreaterThan(clockMs);
  expect(expires).toBeLessThanOrEqual(clockMs + 3_600_000);
  return new URL(body.url);
}

/** A request with no Authorization header at all, as EventSource sends it. */
function anonymous(method: string, url: URL | string, headers: Record<string, string> = {}) {
  const target = typeof url === "string" ? url : `${url.pathname}${url.search}`;
  return h.app.request(target, { method, headers });
}

async function complete(run: Run): Promise<void> {
  await h.database.sql`insert into run_events (run_id, uid, seq, type, data)
    select run_id, uid, 1, 'run.completed', '{"status":"succeeded"}'::jsonb
    from agent_runs where run_id = ${run.run_id}`;
  await h.database.sql`update agent_runs set status = 'succeeded', started_at = now(),
    finished_at = now() where run_id = ${run.run_id}`;
}

describe("event-stream tickets", () => {
  test("a ticket opens its run's stream without Authorization, resumes with Last-Event-ID", async () => {
    const { run } = await newRun();
    const url = await ticketFor(run);
    expect(url.pathname).toBe(`/v1/runs/${run.run_id}/events`);
    await complete(run);
    const res = await anonymous("GET", url);
    expect(res.status).toBe(200);
    const { frames, ended } = await readSse(res.body as ReadableStream<Uint8Array>);
    expect(ended).toBe(true);
    expect(eventFrames(frames).map((f) => [f.id, f.event])).toEqual([["1", "run.completed"]]);
    // EventSource reconnects with the same URL and Last-Event-ID.
    const again = await anonymous("GET", url, { "Last-Event-ID": "1" });
    expect(again.status).toBe(200);
    expect(eventFrames((await readSse(again.body as ReadableStream)).frames)).toEqual([]);
  });

  test("a ticket for run X does not open run Y of the same user", async () => {
    const { run: x } = await newRun();
    const { run: y } = await newRun();
    const ticket = (await ticketFor(x)).searchParams.get("ticket") ?? "";
    const res = await anonymous("GET", `/v1/runs/${y.run_id}/events?ticket=${ticket}`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unauthenticated");
  });

  test("a ticket is refused by every other route, as a bearer token, and by the data plane", async () => {
    const { run, thread } = await newRun();
    const ticket = (await ticketFor(run)).searchParams.get("ticket") ?? "";
    const q = `?ticket=${ticket}`;
    for (const [method, path] of [
      ["GET", `/v1/runs/${run.run_id}${q}`],
      ["POST", `/v1/runs/${run.run_id}/cancel${q}`],
      ["POST", `/v1/runs/${run.run_id}/events/ticket${q}`],
      ["GET", `/v1/runs/${run.run_id}/changes${q}`],
      ["GET", `/v1/threads${q}`],
      ["GET", `/v1/threads/${thread.thread_id}${q}`],
      ["POST", `/v1/threads/${thread.thread_id}/files/access${q}`],
      ["DELETE", `/v1/threads/${thread.thread_id}${q}`],
      ["POST", `/v1/runs/${run.run_id}/events${q}`],
      ["GET", `/v1/runs/${run.run_id}/events/${q}`],
    ] as const) {
      const res = await anonymous(method, path);
      expect([method, path, res.status]).toEqual([method, path, 401]);
    }
    // Nothing happened: the run was not cancelled, the thread not deleted.
    const [row] = await h.database.sql`select status, cancel_requested from agent_runs
      where run_id = ${run.run_id}`;
    expect(row).toEqual({ status: "pending", cancel_requested: false });
    expect((await h.call("GET", `/v1/threads/${thread.thread_id}`)).status).toBe(200);

    // As a bearer token (even on its own stream): not an identity token.
    const bearer = await h.app.request(`/v1/runs/${run.run_id}/events`, {
      headers: { Authorization: `Bearer ${ticket}` },
    });
    expect(bearer.status).toBe(401);

    // The data plane shares the signing key, and still refuses a ticket.
    const dp = await fetch(`${h.dataPlane.url}/dp/v1/files?path=/`, {
      headers: { Authorization: `Bearer ${ticket}` },
    });
    expect(dp.status).toBe(401);
  });

  test("a ticket expires (at most an hour)", async () => {
    const { run } = await newRun();
    const url = await ticketFor(run);
    await complete(run);
    clockMs += 3_600_000 + 10_000;
    try {
      const res = await anonymous("GET", url);
      expect(res.status).toBe(401);
    } finally {
      clockMs = Date.now();
    }
  });

  test("another user's run gets no ticket (404), and a ticket needs a token", async () => {
    const { run } = await newRun();
    const res = await h.call("POST", `/v1/runs/${run.run_id}/events/ticket`, { uid: BOB });
    expect(res.status).toBe(404);
    const none = await h.call("POST", `/v1/runs/${run.run_id}/events/ticket`, { uid: null });
    expect(none.status).toBe(401);
    // A ticket of alice's never reads as bob's, and a tampered one is refused.
    const ticket = (await ticketFor(run)).searchParams.get("ticket") ?? "";
    const tampered = `${ticket.slice(0, -4)}${ticket.endsWith("AAAA") ? "BBBB" : "AAAA"}`;
    const bad = await anonymous("GET", `/v1/runs/${run.run_id}/events?ticket=${tampered}`);
    expect(bad.status).toBe(401);
  });
});
