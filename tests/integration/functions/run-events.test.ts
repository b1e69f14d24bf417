import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { serve } from "@hono/node-server";
import pino from "pino";
import { describe, expect, test, vi } from "vitest";
import type { Run } from "../../../shared/contracts/run.ts";
import { runEventSchema } from "../../../shared/contracts/run-event.ts";
import {
  BOB,
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";
import { eventFrames, readSse } from "./support/sse.ts";

// GET /v1/runs/{id}/events over real Postgres. Events are written the way the run worker
// writes them: rows in run_events (gap-free seq) plus pg_notify on workcell_run_events.

const h = functionsHarnessForFile({ limits: { eventKeepAliveMs: 60_000 } });

async function newRun(harness: FunctionsHarness = h, uid = "alice"): Promise<Run> {
  const res = await harness.call("POST", "/v1/runs", { body: { input: "x" }, uid });
  return (await jsonOf<{ run: Run }>(res)).run;
}

async function appendEvent(
  harness: FunctionsHarness,
  run: Run,
  type: string,
  data: Record<string, unknown>,
  notify = true,
): Promise<void> {
  // JSON as text: drizzle replaced this client's serializers (shared/db/client.ts).
  await harness.database.sql.begin(async (tx) => {
    await tx`insert into run_events (run_id, uid, seq, type, data)
      select ${run.run_id}, uid, coalesce((select max(seq) from run_events where run_id = ${run.run_id}), 0) + 1,
        ${type}, ${JSON.stringify(data)}::jsonb from agent_runs where run_id = ${run.run_id}`;
    if (notify) await tx`select pg_notify('workcell_run_events', ${run.run_id})`;
  });
}

function stream(harness: FunctionsHarness, run: Run, headers: Record<string, string> = {}) {
  return harness.call("GET", `/v1/runs/${run.run_id}/events`, { headers });
}

describe("GET /v1/runs/{id}/events", () => {
  test("streams events as they are written and ends after run.completed", async () => {
    const run = await newRun();
    await appendEvent(h, run, "run.status", { status: "running" });
    const res = await stream(h, run);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    const waiting = h.streamWaiting(run.run_id);
    const reading = readSse(res.body as ReadableStream<Uint8Array>);
    // Written once the stream has sent event 1 and waits: these two arrive live.
    await waiting;
    await appendEvent(h, run, "message.delta", { text: "line one\nline two" });
    await appendEvent(h, run, "run.completed", { status: "succeeded" });
    const { frames, ended } = await reading;
    expect(ended).toBe(true);
    expect(frames[0]?.retry).toBeDefined();
    const events = eventFrames(frames);
    expect(events.map((f) => [f.id, f.event])).toEqual([
      ["1", "run.status"],
      ["2", "message.delta"],
      ["3", "run.completed"],
    ]);
    for (const frame of events) {
      const event = runEventSchema.parse(JSON.parse(frame.data ?? ""));
      expect(event.run_id).toBe(run.run_id);
      expect(String(event.seq)).toBe(frame.id);
    }
    expect(JSON.parse(events[1]?.data ?? "").data.text).toBe("line one\nline two");
  });

  test("Last-Event-ID resumes after that event", async () => {
    const run = await newRun();
    for (const status of ["running"]) await appendEvent(h, run, "run.status", { status });
    await appendEvent(h, run, "message.completed", { text: "done" });
    await appendEvent(h, run, "run.completed", { status: "succeeded" });
    const { frames } = await readSse(
      (await stream(h, run, { "last-event-id": "2" })).body as ReadableStream,
    );
    expect(eventFrames(frames).map((f) => f.id)).toEqual(["3"]);
    const { frames: all } = await readSse(
      (await stream(h, run, { "last-event-id": "" })).body as ReadableStream,
    );
    expect(eventFrames(all).map((f) => f.id)).toEqual(["1", "2", "3"]);
  });

  test("a cancelled pending run's stream ends with its run.completed", async () => {
    const run = await newRun();
    const waiting = h.streamWaiting(run.run_id);
    const reading = readSse((await stream(h, run)).body as ReadableStream);
    await waiting;
    await h.call("POST", `/v1/runs/${run.run_id}/cancel`);
    const { frames, ended } = await reading;
    expect(ended).toBe(true);
    expect(eventFrames(frames).map((f) => JSON.parse(f.data ?? "").data)).toEqual([
      { status: "cancelled" },
    ]);
  });

  test("NOTIFY wakes the stream: with a 60 s poll interval the event still arrives", async () => {
    const slow = await startFunctionsHarness({
      limits: { eventPollMinMs: 60_000, eventPollMaxMs: 60_000, eventKeepAliveMs: 120_000 },
    });
    try {
      const run = await newRun(slow);
      const waiting = slow.streamWaiting(run.run_id);
      const reading = readSse((await stream(slow, run)).body as ReadableStream);
      // The stream waits (60 s poll): only the NOTIFY can wake it before the test times out.
      await waiting;
      await appendEvent(slow, run, "run.completed", { status: "succeeded" });
      const { frames } = await reading;
      expect(eventFrames(frames).map((f) => f.event)).toEqual(["run.completed"]);
    } finally {
      await slow.close();
    }
  });

  test("without LISTEN (Lambda, Workers) bounded polling delivers events written without NOTIFY", async () => {
    const polling = await startFunctionsHarness({
      runEvents: "poll",
      limits: { eventPollMaxMs: 200 },
    });
    try {
      const run = await newRun(polling);
      const waiting = polling.streamWaiting(run.run_id);
      const reading = readSse((await stream(polling, run)).body as ReadableStream);
      await waiting;
      await appendEvent(polling, run, "run.status", { status: "running" }, false);
      await appendEvent(
        polling,
        run,
        "run.completed",
        { status: "failed", error: { code: "x", message: "y" } },
        false,
      );
      const { frames } = await reading;
      expect(eventFrames(frames).map((f) => f.id)).toEqual(["1", "2"]);
    } finally {
      await polling.close();
    }
  });

  test("a run that ended without a run.completed event (worker died) still ends the stream", async () => {
    const run = await newRun();
    await appendEvent(h, run, "run.status", { status: "running" });
    await h.database.sql`update agent_runs set status = 'failed', finished_at = now(),
      error = ${JSON.stringify({ code: "node_lost", message: "lost" })}::jsonb where run_id = ${run.run_id}`;
    const { frames, ended } = await readSse((await stream(h, run)).body as ReadableStream);
    expect(ended).toBe(true);
    expect(eventFrames(frames).map((f) => f.id)).toEqual(["1"]);
  });

  test("keep-alive comments while idle; the stream ends at its maximum duration and resumes", async () => {
    const short = await startFunctionsHarness({
      limits: { eventKeepAliveMs: 100, eventStreamMaxMs: 700, eventPollMaxMs: 50 },
    });
    try {
      const run = await newRun(short);
      await appendEvent(short, run, "run.status", { status: "running" });
      const first = await readSse((await stream(short, run)).body as ReadableStream);
      expect(first.ended).toBe(true);
      expect(first.frames.some((f) => f.comment === "keep-alive")).toBe(true);
      const lastId = eventFrames(first.frames).at(-1)?.id ?? "";
      expect(lastId).toBe("1");
      await appendEvent(short, run, "run.completed", { status: "succeeded" });
      const resumed = await readSse(
        (await stream(short, run, { "last-event-id": lastId })).body as ReadableStream,
      );
      expect(eventFrames(resumed.frames).map((f) => f.id)).toEqual(["2"]);
    } finally {
      await short.close();
    }
  });

  test("a client that goes away ends the stream's reads", async () => {
    const run = await newRun();
    const controller = new AbortController();
    const res = await h.app.request(`/v1/runs/${run.run_id}/events`, {
      headers: { authorization: `Bearer ${await h.token("alice")}` },
      signal: controller.signal,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // retry frame
    controller.abort();
    await reader.cancel();
    // The app keeps working and nothing leaks into later requests.
    expect((await h.call("GET", `/v1/runs/${run.run_id}`)).status).toBe(200);
  });

  test("another user's run, unknown and malformed ids: 404; a bad Last-Event-ID: 400", async () => {
    const run = await newRun();
    expect((await h.call("GET", `/v1/runs/${run.run_id}/events`, { uid: BOB })).status).toBe(404);
    expect((await h.call("GET", `/v1/runs/${crypto.randomUUID()}/events`)).status).toBe(404);
    expect((await h.call("GET", "/v1/runs/nope/events")).status).toBe(404);
    for (const bad of ["-1", "abc", "1.5", "99999999999"]) {
      expect((await stream(h, run, { "last-event-id": bad })).status, bad).toBe(400);
    }
  });
});

describe("a client that disconnects over real HTTP", () => {
  test("is not logged as an error, on our logger or the server's console", async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const logger = pino(
      { level: "debug" },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)) as { level: number; msg: string });
          done();
        },
      }),
    );
    const harness = await startFunctionsHarness({ logger, limits: { eventKeepAliveMs: 60_000 } });
    const consoleErrors: unknown[] = [];
    const consoleSpy = vi.spyOn(console, "error").mockImplementation((...args) => {
      consoleErrors.push(args);
    });
    const server = serve({ fetch: harness.app.fetch, port: 0, hostname: "127.0.0.1" });
    try {
      await new Promise<void>((resolve) => server.once("listening", () => resolve()));
      const { port } = server.address() as AddressInfo;
      const run = await newRun(harness);
      for (let i = 0; i < 3; i++) {
        const controller = new AbortController();
        const res = await fetch(`http://127.0.0.1:${port}/v1/runs/${run.run_id}/events`, {
          headers: { authorization: `Bearer ${await harness.token("alice")}` },
          signal: controller.signal,
        });
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        await reader.read(); // the retry frame: the stream is open and now waits
        controller.abort();
        await reader.read().catch(() => undefined);
      }
      // The server saw each disconnect: its stream ended (debug line), without an error.
      await vi.waitFor(
        () => {
          const closed = lines.filter((l) => l.msg === "run event stream closed by the client");
          expect(closed.length).toBe(3);
        },
        { timeout: 10_000 },
      );
      expect(lines.filter((l) => l.level >= 40)).toEqual([]);
      expect(consoleErrors).toEqual([]);
    } finally {
      consoleSpy.mockRestore();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await harness.close();
    }
  });
});
