import { spawn } from "node:child_process";
import { readFileSync, watch, writeFileSync } from "node:fs";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { grantLockKey } from "../../../agent-host/skills/skill-locks.ts";
import { createDb } from "../../../shared/db/client.ts";
import { freshDatabase } from "../../support/postgres.ts";
import { namesIn, type SkillsEnv, setupSkills, testSignal } from "./skills-harness.ts";

const ALICE = "alice";
const SLUGS = ["alpha", "beta", "gamma", "delta"];

describe("skill projection refresh under concurrency", () => {
  let env: SkillsEnv;

  beforeEach(async () => {
    env = await setupSkills();
    for (const slug of SLUGS) {
      const files: Record<string, string> = { "SKILL.md": `---\ndescription: ${slug}\n---\n` };
      for (let i = 0; i < 40; i++) files[`data/f${i}.txt`] = `${slug} ${i}\n`.repeat(200);
      await env.install(slug, files);
    }
  });

  afterEach(async () => {
    await env.cleanup();
  });

  /** Starts two refresh-worker processes; returns a function that stops them and reads their log. */
  function startWorkers(databaseUrls: readonly [string, string], holdMs = 0) {
    const stopFile = join(env.dataRoot, "stop");
    const logFile = join(env.dataRoot, "refresh.log");
    const marker = join(env.dataRoot, "inside");
    writeFileSync(logFile, "");
    const children = databaseUrls.map((url) =>
      spawn(
        process.execPath,
        [
          join(import.meta.dirname, "refresh-worker.ts"),
          url,
          env.dataRoot,
          ALICE,
          stopFile,
          marker,
          logFile,
          String(holdMs),
        ],
        { stdio: ["ignore", "inherit", "inherit"] },
      ),
    );
    const done = children.map(
      (child) => new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code))),
    );
    return {
      async started() {
        await logUntil(logFile, "both refresh workers took the flock", (lines) =>
          bothPids(lines, " locked "),
        );
      },
      /** Resolves once both processes finished a refresh that began after this call. */
      async bothRefreshed() {
        const from = readLog(logFile).length;
        await logUntil(logFile, "both refresh workers refreshed again", (lines) =>
          bothPids(lines.slice(from), " locked ", " unlocking "),
        );
      },
      /** Resolves once the processes held the flock more than `count` times in all. */
      async heldMoreThan(count: number) {
        await logUntil(
          logFile,
          `more than ${count} refreshes`,
          (lines) =>
            bothPids(lines, " locked ") &&
            lines.filter((l) => l.includes(" unlocking ")).length > count,
        );
      },
      async stop() {
        writeFileSync(stopFile, "");
        expect(await Promise.all(done)).toEqual([0, 0]);
        return readLog(logFile);
      },
    };
  }

  it("two agent-host processes refreshing one uid serialize on the flock and end equal to the grants", async () => {
    const workers = startWorkers([env.database.url, env.database.url]);
    // Both processes are up and refreshing before the grants start to change.
    await workers.started();
    // Change the grants while both processes refresh.
    const plan: [string, "grant" | "revoke"][] = [
      ["alpha", "grant"],
      ["beta", "grant"],
      ["gamma", "grant"],
      ["alpha", "revoke"],
      ["delta", "grant"],
      ["beta", "revoke"],
      ["alpha", "grant"],
    ];
    for (const [slug, action] of plan) {
      // Each change lands between refreshes of both processes, not all before one of them.
      await workers.bothRefreshed();
      if (action === "grant") await env.grant(ALICE, slug);
      else await env.revoke(ALICE, slug);
    }
    await workers.bothRefreshed();
    const log = await workers.stop();
    expectSerialized(log, plan.length);

    // Final state equals the grants, no temp directories left.
    expect(namesIn(env.projectionPath(ALICE))).toEqual(["alpha", "delta", "gamma"]);
    expect(namesIn(join(env.dataRoot, "skills", "projections"))).toEqual([
      "alice",
      "alice.lock",
      "alice.state",
    ]);
    expect(namesIn(join(env.dataRoot, "skills", "sources"))).toEqual([...SLUGS].sort());
  }, 240_000);

  it("the flock alone serializes two processes whose advisory locks do not meet (two databases)", async () => {
    // Same catalogue and grants in a second database: the advisory locks of the two
    // processes live in different databases and never contend; only the flock remains.
    const other = await freshDatabase();
    try {
      const rows = await env.database.sql`select slug, kind, description, content_hash from skills`;
      for (const row of rows) {
        await other.sql`insert into skills (slug, kind, description, content_hash)
          values (${row.slug}, ${row.kind}, ${row.description}, ${row.content_hash})`;
      }
      for (const slug of ["alpha", "gamma"]) {
        await env.grant(ALICE, slug);
        await other.sql`insert into skill_grants (uid, slug) values (${ALICE}, ${slug})`;
      }
      const workers = startWorkers([env.database.url, other.url], 25);
      await workers.started();
      await workers.heldMoreThan(6);
      const log = await workers.stop();
      expectSerialized(log, 6);
      expect(namesIn(env.projectionPath(ALICE))).toEqual(["alpha", "gamma"]);
    } finally {
      await other.drop();
    }
  }, 240_000);

  it("a refresh blocked on the advisory lock while a revoke commits sees the revoke", async () => {
    await env.grant(ALICE, "alpha");
    await env.grant(ALICE, "beta");
    expect((await env.refresher().refresh(ALICE, testSignal())).projected).toEqual([
      "alpha",
      "beta",
    ]);

    // The revoke, as the control plane does it: lock the uid, delete, and (not yet) commit.
    const revoker = postgres(env.database.url, { max: 1, onnotice: () => {} });
    const db = createDb(revoker);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const revoke = db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${grantLockKey(ALICE)})`);
      await tx.execute(sql`delete from skill_grants where uid = ${ALICE} and slug = 'alpha'`);
      locked();
      await held;
    });
    try {
      await isLocked;
      let busy!: () => void;
      const foundBusy = new Promise<void>((resolve) => {
        busy = resolve;
      });
      const refresh = env
        .refresher({ hooks: { onGrantLockBusy: () => busy() } })
        .refresh(ALICE, testSignal());
      // The refresh found the revoke's lock held and now queues behind it.
      await foundBusy;
      // The projection still holds alpha: nothing happened while the refresh waited.
      expect(namesIn(env.projectionPath(ALICE))).toEqual(["alpha", "beta"]);
      release();
      await revoke;
      const outcome = await refresh;
      expect(outcome).toMatchObject({ ok: true, projected: ["beta"], removed: ["alpha"] });
      expect(namesIn(env.projectionPath(ALICE))).toEqual(["beta"]);
    } finally {
      release();
      await revoke.catch(() => {});
      await revoker.end();
    }
  });

  it("empties the projection when the refresh's database connection goes silent under the flock", async () => {
    await env.grant(ALICE, "alpha");
    await env.refresher().refresh(ALICE, testSignal());
    // The refresher reaches Postgres through a TCP proxy the test can cut, as a network
    // partition would: its advisory lock is then as good as gone.
    const proxy = await startProxy(new URL(env.database.url));
    const client = postgres(proxy.url, { max: 2, onnotice: () => {} });
    try {
      const refresher = env.refresher({
        db: createDb(client),
        timeouts: { livenessTimeoutMs: 300 },
        hooks: { onLocked: () => proxy.pause() },
      });
      const outcome = await refresher.refresh(ALICE, testSignal());
      expect(outcome).toMatchObject({ ok: false, projected: [] });
      expect(outcome.failures).toEqual([expect.objectContaining({ reason: "grants_unavailable" })]);
      expect(namesIn(env.projectionPath(ALICE))).toEqual([]);
    } finally {
      proxy.close();
      await client.end({ timeout: 1 }).catch(() => {});
    }
    // The next refresh, on a healthy connection, projects the grants again.
    expect((await env.refresher().refresh(ALICE, testSignal())).projected).toEqual(["alpha"]);
  });

  it("a stale refresh never resurrects a revoked skill (refresh racing a revoke and its own refresh)", async () => {
    await env.grant(ALICE, "alpha");
    await env.grant(ALICE, "beta");
    // Many rounds: a refresh started before the revoke, the revoke, and the revoke's refresh.
    for (let round = 0; round < 5; round++) {
      await env.grant(ALICE, "alpha");
      const early = env.refresher().refresh(ALICE, testSignal());
      await env.revoke(ALICE, "alpha");
      const after = env.refresher().refresh(ALICE, testSignal());
      const [, last] = await Promise.all([early, after]);
      expect(last.projected).toEqual(["beta"]);
      expect(namesIn(env.projectionPath(ALICE))).toEqual(["beta"]);
    }
  });
});

function readLog(logFile: string): string[] {
  return readFileSync(logFile, "utf8").trim().split("\n").filter(Boolean);
}

/** Whether two processes each logged every one of `marks` (a lock, then its release) in `lines`. */
function bothPids(lines: readonly string[], ...marks: string[]): boolean {
  const pids = new Set(lines.map((line) => line.split(" ")[0]));
  let complete = 0;
  for (const pid of pids) {
    const own = lines.filter((line) => line.startsWith(`${pid} `));
    let at = 0;
    for (const mark of marks) {
      const found = own.findIndex((line, i) => i >= at && line.includes(mark));
      if (found === -1) {
        at = -1;
        break;
      }
      at = found + 1;
    }
    if (at !== -1) complete++;
  }
  return complete >= 2;
}

/**
 * Resolves when `ready(lines)` holds for the refresh log, re-checked whenever a worker
 * appends to it (inotify), bounded so that a stuck worker fails the test with `what`.
 */
async function logUntil(
  logFile: string,
  what: string,
  ready: (lines: string[]) => boolean,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const watcher = watch(logFile);
    const finish = (error?: Error) => {
      clearTimeout(timer);
      watcher.close();
      if (error) reject(error);
      else resolve();
    };
    const check = () => {
      if (ready(readLog(logFile))) finish();
    };
    const timer = setTimeout(
      () => finish(new Error(`timed out waiting for ${what}:\n${readLog(logFile).join("\n")}`)),
      // Generous: two Node processes starting on a loaded machine.
      90_000,
    );
    watcher.on("change", check);
    watcher.on("error", (error) => finish(error));
    check();
  });
}

/** No overlap was seen, and the intervals in which each process held the flock are disjoint. */
function expectSerialized(log: readonly string[], minIntervals: number): void {
  expect(log.filter((line) => line.includes("overlap"))).toEqual([]);
  const intervals: { pid: string; from: number; to: number }[] = [];
  const open = new Map<string, number>();
  for (const line of log) {
    const [pid, what, at] = line.split(" ") as [string, string, string];
    if (what === "locked") open.set(pid, Number(at));
    if (what === "unlocking")
      intervals.push({ pid, from: open.get(pid) as number, to: Number(at) });
  }
  intervals.sort((a, b) => a.from - b.from);
  for (let i = 1; i < intervals.length; i++) {
    expect(intervals[i]?.from).toBeGreaterThanOrEqual(intervals[i - 1]?.to as number);
  }
  expect(new Set(intervals.map((i) => i.pid)).size).toBe(2);
  expect(intervals.length).toBeGreaterThan(minIntervals);
}

/** A TCP proxy to Postgres whose traffic can be stopped (pause) and whose connections can be cut (close). */
async function startProxy(target: URL): Promise<{ url: string; pause(): void; close(): void }> {
  const sockets = new Set<Socket>();
  let paused = false;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => sockets.delete(socket));
    }
    client.on("data", (chunk) => paused || upstream.write(chunk));
    upstream.on("data", (chunk) => paused || client.write(chunk));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const url = new URL(target);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.toString(),
    pause() {
      paused = true;
    },
    close() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}
