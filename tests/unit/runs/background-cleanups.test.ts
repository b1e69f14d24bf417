import pino from "pino";
import { describe, expect, test } from "vitest";
import { BackgroundCleanups } from "../../../agent-host/runs/execute/background-cleanups.ts";

const logger = pino({ level: "silent" });

/** A cleanup the test ends by hand; `started` says whether the pool began it. */
function gate() {
  let open!: () => void;
  let fail!: (error: unknown) => void;
  const state = { started: false, ended: false };
  const done = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  const cleanup = async () => {
    state.started = true;
    await done;
    state.ended = true;
  };
  return { cleanup, state, open: () => open(), fail: (error: unknown) => fail(error) };
}

/** Lets pending promise callbacks run (no timers involved). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("BackgroundCleanups (decision 0158)", () => {
  test("start returns once the cleanup runs, not when it ends: the caller's slot is free", async () => {
    const pool = new BackgroundCleanups({ logger, concurrency: 2, attempts: 1, retryDelayMs: 1 });
    const a = gate();
    await pool.start("a", a.cleanup);
    expect(a.state).toEqual({ started: true, ended: false });
    expect(pool.running).toBe(1);
    a.open();
    await pool.drain();
    expect(a.state.ended).toBe(true);
    expect(pool.running).toBe(0);
  });

  test("at most `concurrency` run at once; one more waits in start for room (bounded)", async () => {
    const pool = new BackgroundCleanups({ logger, concurrency: 2, attempts: 1, retryDelayMs: 1 });
    const [a, b, c] = [gate(), gate(), gate()];
    await pool.start("a", a.cleanup);
    await pool.start("b", b.cleanup);
    let cStarted = false;
    const third = pool.start("c", c.cleanup).then(() => {
      cStarted = true;
    });
    await settle();
    expect(cStarted).toBe(false);
    expect(c.state.started).toBe(false);
    expect(pool.running).toBe(2);
    a.open();
    await third;
    expect(c.state.started).toBe(true);
    b.open();
    c.open();
    await pool.drain();
    expect([a, b, c].map((g) => g.state.ended)).toEqual([true, true, true]);
  });

  test("drain waits for running cleanups and for those still waiting for room (none lost on stop)", async () => {
    const pool = new BackgroundCleanups({ logger, concurrency: 1, attempts: 1, retryDelayMs: 1 });
    const [a, b] = [gate(), gate()];
    await pool.start("a", a.cleanup);
    const second = pool.start("b", b.cleanup);
    let drained = false;
    const draining = pool.drain().then(() => {
      drained = true;
    });
    a.open();
    await second;
    await settle();
    expect(drained).toBe(false);
    b.open();
    await draining;
    expect(b.state.ended).toBe(true);
  });

  test("a transient database failure is retried; any other failure is recorded once, never thrown", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const recording = pino(
      { level: "warn" },
      { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const pool = new BackgroundCleanups({
      logger: recording,
      concurrency: 2,
      attempts: 3,
      retryDelayMs: 1,
    });
    let transientCalls = 0;
    await pool.start("transient", async () => {
      transientCalls++;
      if (transientCalls < 3) throw Object.assign(new Error("gone"), { code: "ECONNRESET" });
    });
    let fatalCalls = 0;
    await pool.start("fatal", async () => {
      fatalCalls++;
      throw new Error("not a database outage");
    });
    await pool.drain();
    expect(transientCalls).toBe(3);
    expect(fatalCalls).toBe(1);
    const failed = lines.filter((l) => l.msg === "background cleanup failed");
    expect(failed.map((l) => l.cleanup)).toEqual(["fatal"]);
    expect(lines.filter((l) => l.msg === "background cleanup retried")).toHaveLength(2);
  });

  test("a transient failure that outlasts the attempts is recorded, not retried forever", async () => {
    const pool = new BackgroundCleanups({ logger, concurrency: 1, attempts: 2, retryDelayMs: 1 });
    let calls = 0;
    await pool.start("down", async () => {
      calls++;
      throw Object.assign(new Error("gone"), { code: "ECONNREFUSED" });
    });
    await pool.drain();
    expect(calls).toBe(2);
  });
});
