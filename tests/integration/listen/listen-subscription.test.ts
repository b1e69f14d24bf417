import { Writable } from "node:stream";
import { pino } from "pino";
import postgres from "postgres";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { ListenFn } from "../../../shared/listen/listen-fn.ts";
import { ListenSubscription } from "../../../shared/listen/listen-subscription.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";
import { freePort } from "../../setup/free-port.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

// The LISTEN the agent-host's cancel watcher, lease wakeups and fair run slots hold, on a
// real PostgreSQL: it delivers NOTIFYs, is started once, ends at stop(), and degrades to a
// warning (never a failed start) when the database cannot be reached.

const CHANNEL = "workcell_test_subscription";

/** A logger whose JSON lines land in `lines`. */
function recordingLogger(lines: Record<string, unknown>[]) {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return pino({ level: "info" }, stream);
}

/** The real postgres.js LISTEN, counting how often it is started and ended. */
function countingListen(listen: ListenFn) {
  const counts = { listens: 0, unlistens: 0 };
  const fn: ListenFn = async (channel, onPayload) => {
    counts.listens++;
    const unlisten = await listen(channel, onPayload);
    return async () => {
      counts.unlistens++;
      await unlisten();
    };
  };
  return { fn, counts };
}

describe("ListenSubscription (real Postgres)", () => {
  let database: TestDatabase;
  beforeEach(async () => {
    database = await freshDatabase();
  });
  afterEach(async () => {
    await database.drop();
  });

  test("delivers NOTIFYs from start() to stop(), LISTENing once however often started", async () => {
    const lines: Record<string, unknown>[] = [];
    const { fn, counts } = countingListen(postgresListen(database.sql));
    const payloads: string[] = [];
    let received: () => void = () => {};
    const subscription = new ListenSubscription({
      listen: fn,
      channel: CHANNEL,
      onPayload: (payload) => {
        payloads.push(payload);
        received();
      },
      logger: recordingLogger(lines),
      what: "test notifications",
      fallback: "the test polls instead",
    });
    await subscription.start();
    await subscription.start();
    expect(counts.listens).toBe(1);

    const arrived = new Promise<void>((resolve) => {
      received = resolve;
    });
    await database.sql.notify(CHANNEL, "run-1");
    await arrived;
    expect(payloads).toEqual(["run-1"]);

    await subscription.stop();
    await subscription.stop();
    expect(counts).toEqual({ listens: 1, unlistens: 1 });
    expect(lines.filter((l) => l.level === 40)).toEqual([]);
  });

  test("a LISTEN that cannot connect is a warning saying what happens instead; start resolves", async () => {
    const lines: Record<string, unknown>[] = [];
    // Nothing listens on a port freshly found free: the connection is refused.
    const unreachable = postgres(`postgres://nobody@127.0.0.1:${await freePort()}/none`, {
      connect_timeout: 5,
      max: 1,
      onnotice: () => {},
    });
    try {
      const payloads: string[] = [];
      const subscription = new ListenSubscription({
        listen: postgresListen(unreachable),
        channel: CHANNEL,
        onPayload: (payload) => payloads.push(payload),
        logger: recordingLogger(lines),
        what: "test notifications",
        fallback: "the test polls instead",
      });
      await expect(subscription.start()).resolves.toBeUndefined();
      expect(lines.map((l) => [l.level, l.msg])).toEqual([
        [40, "LISTEN for test notifications failed; the test polls instead"],
      ]);
      expect((lines[0]?.err as { code?: string } | undefined)?.code).toBe("ECONNREFUSED");
      // Nothing is held, so stopping has nothing to end and nothing to warn about.
      await subscription.stop();
      expect(lines).toHaveLength(1);
      expect(payloads).toEqual([]);
    } finally {
      await unreachable.end({ timeout: 1 });
    }
  });

  test("without a listen function nothing is started and nothing is logged", async () => {
    const lines: Record<string, unknown>[] = [];
    const subscription = new ListenSubscription({
      listen: undefined,
      channel: CHANNEL,
      onPayload: () => {},
      logger: recordingLogger(lines),
      what: "test notifications",
      fallback: "the test polls instead",
    });
    await subscription.start();
    await subscription.stop();
    expect(lines).toEqual([]);
  });
});
