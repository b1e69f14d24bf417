import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import { freePort } from "../../setup/free-port.ts";
import { conditionWaiters } from "../../support/condition-waiters.ts";
import { functionsEntryEnv } from "../../support/functions-entry-env.ts";
import { type PausableProxy, startPausableProxy } from "../../support/pausable-proxy.ts";
import type { TestDatabase } from "../../support/postgres.ts";

// Issue 32 (3): the Node entry with its database behind a proxy that stops forwarding
// (paused: a hung database) or refuses connections (cut: a stopped one). /v1/healthz
// answers 503 within 2.5 s (its probes give up at 2 s); /metrics shows the database down
// and the requests that hang; SIGTERM ends the process within SHUTDOWN_TIMEOUT_SECONDS,
// naming the steps it abandoned.

const ROOT = join(import.meta.dirname, "../../..");
const SECRET = "hung-database-secret-0123456789abcdef";
/** The bound for a health answer with the database hung or gone. */
const HEALTH_BOUND_MS = 2_500;
const SHUTDOWN_TIMEOUT_SECONDS = 3;

type Entry = {
  url: string;
  metricsUrl: string;
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  untilOutput(done: (out: string) => boolean): Promise<void>;
};

let database: TestDatabase;
let vars: Record<string, string>;
let proxy: PausableProxy;
let entry: Entry | undefined;

async function startEntry(): Promise<Entry> {
  const port = await freePort();
  const metricsPort = await freePort();
  const dbUrl = new URL(database.url);
  dbUrl.host = `127.0.0.1:${proxy.port}`;
  const child = spawn(process.execPath, [join(ROOT, "functions/entry/node.ts")], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      ...vars,
      DATABASE_URL: dbUrl.toString(),
      HOST: "127.0.0.1",
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      METRICS_HOST: "127.0.0.1",
      SHUTDOWN_TIMEOUT_SECONDS: String(SHUTDOWN_TIMEOUT_SECONDS),
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const waiters = conditionWaiters();
  const append = (d: unknown) => {
    output += String(d);
    waiters.changed();
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  const url = `http://127.0.0.1:${port}`;
  const e: Entry = {
    url,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    child,
    output: () => output,
    exited,
    untilOutput: (done) =>
      waiters.until(
        () => done(output),
        60_000,
        () => `expected output not seen:\n${output}`,
      ),
  };
  return e;
}

beforeAll(async () => {
  ({ database, vars } = await functionsEntryEnv({
    devJwtSecret: SECRET,
    queuePrefix: "hungdb",
    logLevel: "info",
  }));
  const target = new URL(database.url);
  proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port) });
}, 60_000);
afterAll(async () => {
  await proxy?.close();
  await database?.drop();
});
afterEach(async () => {
  proxy.resume();
  if (entry && entry.child.exitCode === null) {
    entry.child.kill("SIGKILL");
    await entry.exited;
  }
  entry = undefined;
});

/** Polls healthz until it answers 200 (the entry is up and its pool connected). */
async function healthy(e: Entry): Promise<void> {
  for (;;) {
    if (e.child.exitCode !== null) throw new Error(`entry exited:\n${e.output()}`);
    const ok = await fetch(`${e.url}/v1/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function metric(e: Entry, line: RegExp): Promise<number | undefined> {
  const text = await (await fetch(e.metricsUrl, { signal: AbortSignal.timeout(5_000) })).text();
  const m = text.match(line);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

describe.each(["paused", "cut"] as const)("the database %s", (fault) => {
  test("healthz answers 503 (db down) within 2.5 s, and /metrics shows it", async () => {
    entry = await startEntryWhenReady();
    expect(await metric(entry, /^workcell_db_up (\d+)$/m)).toBe(1);
    if (fault === "paused") proxy.pause();
    else proxy.cut();
    for (let i = 0; i < 3; i++) {
      // The bound is the requirement, as the client's own timeout.
      const res = await fetch(`${entry.url}/v1/healthz`, {
        signal: AbortSignal.timeout(HEALTH_BOUND_MS),
      });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ status: "down", components: { db: "down" } });
    }
    expect(await metric(entry, /^workcell_db_up (\d+)$/m)).toBe(0);
  }, 120_000);
});

test("SIGTERM with the database paused and a request hanging on it exits within the bound, naming what it abandoned", async () => {
  entry = await startEntryWhenReady();
  const e = entry;
  proxy.pause();
  const token = await mintDevToken(SECRET, "alice");
  const hanging = fetch(`${e.url}/v1/threads`, {
    headers: { authorization: `Bearer ${token}` },
  }).catch((error: unknown) => error);
  const inFlight = /^workcell_http_requests_in_flight\{plane="api"\} (\d+)$/m;
  await waitFor(async () => ((await metric(e, inFlight)) ?? 0) >= 1);
  e.child.kill("SIGTERM");
  const bound = (SHUTDOWN_TIMEOUT_SECONDS + 10) * 1000;
  const code = await Promise.race([
    e.exited,
    new Promise<"still running">((r) => setTimeout(() => r("still running"), bound).unref()),
  ]);
  expect(code).toBe(1);
  expect(e.output()).toMatch(/"abandoned":\["http server"/);
  expect(e.output()).toContain("shutdown did not finish; exiting with work abandoned");
  await hanging;
}, 120_000);

async function startEntryWhenReady(): Promise<Entry> {
  const e = await startEntry();
  await healthy(e);
  return e;
}

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met within 30 s");
    await new Promise((r) => setTimeout(r, 100));
  }
}
