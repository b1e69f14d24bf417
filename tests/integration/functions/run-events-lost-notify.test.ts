import { describe, expect, test } from "vitest";
import type { Run } from "../../../shared/contracts/run.ts";
import type { ListenFn } from "../../../shared/listen/listen-fn.ts";
import { pollUntil } from "../../support/poll-until.ts";
import {
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "./support/functions-harness.ts";
import { eventFrames, readSse } from "./support/sse.ts";

// Event streams with LISTEN up back off their fallback re-read to eventPollNotifiedMaxMs
// (decision 0159). These tests lose notifications on purpose, on a real LISTEN over real
// Postgres, and check that a stream still sends every event, in order.

/** The real LISTEN, but payloads for which `lose` says so never reach the waiter. */
function lossyListen(lose: (n: number) => boolean) {
  let delivered = 0;
  let lost = 0;
  const wrap =
    (real: ListenFn): ListenFn =>
    (channel, onPayload, onListen) =>
      real(
        channel,
        (payload) => {
          if (lose(delivered + lost)) lost++;
          else {
            delivered++;
            onPayload(payload);
          }
        },
        onListen,
      );
  return { wrap, counts: () => ({ delivered, lost }) };
}

async function newRun(h: FunctionsHarness): Promise<Run> {
  const res = await h.call("POST", "/v1/runs", { body: { input: "x" }, uid: "alice" });
  return (await jsonOf<{ run: Run }>(res)).run;
}

/** As the run worker writes: a gap-free seq row plus pg_notify, in one transaction. */
async function appendEvent(h: FunctionsHarness, run: Run, type: string, data: object) {
  await h.database.sql.begin(async (tx) => {
    await tx`insert into run_events (run_id, uid, seq, type, data)
      select ${run.run_id}, uid, coalesce((select max(seq) from run_events where run_id = ${run.run_id}), 0) + 1,
        ${type}, ${JSON.stringify(data)}::jsonb from agent_runs where run_id = ${run.run_id}`;
    await tx`select pg_notify('workcell_run_events', ${run.run_id})`;
  });
}

function openStream(h: FunctionsHarness, run: Run) {
  return h.call("GET", `/v1/runs/${run.run_id}/events`);
}

describe("run event streams when notifications are lost", () => {
  test("every other NOTIFY lost: the fallback re-read still delivers every event, in order", async () => {
    const lossy = lossyListen((n) => n % 2 === 0);
    const h = await startFunctionsHarness({
      listen: lossy.wrap,
      limits: { eventPollMinMs: 20, eventPollNotifiedMaxMs: 200, eventKeepAliveMs: 60_000 },
    });
    try {
      const run = await newRun(h);
      let waiting = h.streamWaiting(run.run_id);
      const reading = readSse((await openStream(h, run)).body as ReadableStream);
      for (let i = 1; i <= 6; i++) {
        // Each event is written while the stream waits, so its NOTIFY is what would wake it.
        await waiting;
        waiting = h.streamWaiting(run.run_id);
        await appendEvent(h, run, "message.delta", { text: `part ${i}` });
      }
      await waiting;
      await appendEvent(h, run, "run.completed", { status: "succeeded" });
      const { frames, ended } = await reading;
      expect(ended).toBe(true);
      const events = eventFrames(frames);
      expect(events.map((f) => f.id)).toEqual(["1", "2", "3", "4", "5", "6", "7"]);
      expect(events.map((f) => JSON.parse(f.data ?? "").data.text).slice(0, 6)).toEqual(
        [1, 2, 3, 4, 5, 6].map((i) => `part ${i}`),
      );
      // The losses did happen: half the notifications never reached the stream.
      expect(lossy.counts().lost).toBeGreaterThanOrEqual(3);
    } finally {
      await h.close();
    }
  });

  test("LISTEN re-established after its connection died: waiting streams look again at once", async () => {
    // Every NOTIFY lost and every timed re-read a minute away: only the re-listen wake
    // can deliver the event before the test times out.
    const lossy = lossyListen(() => true);
    const h = await startFunctionsHarness({
      listen: lossy.wrap,
      limits: {
        eventPollMinMs: 60_000,
        eventPollMaxMs: 60_000,
        eventPollNotifiedMaxMs: 60_000,
        eventKeepAliveMs: 120_000,
      },
    });
    try {
      const run = await newRun(h);
      const waiting = h.streamWaiting(run.run_id);
      const reading = readSse((await openStream(h, run)).body as ReadableStream);
      await waiting;
      await appendEvent(h, run, "run.completed", { status: "succeeded" });
      await pollUntil(async () => lossy.counts().lost >= 1, { what: "the NOTIFY to be lost" });
      // Kill the LISTEN connection's backend: postgres.js reconnects and listens again.
      const killed = await h.database.sql<{ pid: number }[]>`
        select pg_terminate_backend(pid) as ok, pid from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and query ilike 'listen %'`;
      expect(killed).toHaveLength(1);
      const { frames, ended } = await reading;
      expect(ended).toBe(true);
      expect(eventFrames(frames).map((f) => [f.id, f.event])).toEqual([["1", "run.completed"]]);
    } finally {
      await h.close();
    }
  });
});
