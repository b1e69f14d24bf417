import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { type JsonLineChild, spawnJsonLineChild } from "../../support/json-line-child.ts";
import { type PausableProxy, startPausableProxy } from "../../support/pausable-proxy.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import type { DriverFaultChildArgs } from "./driver-fault-child.ts";

// Decision 0111: postgres.js 3.4.9 throws from a deferred write when a connection closes
// under it (porsager/postgres#1208), which ends the process. scripts/patch-postgres.mjs
// guards it at install; shared/db/driver-fault-guard.ts contains any driver fault left.
// Each test runs a client process with transactions in flight through a proxy, then cuts
// every connection (what a PostgreSQL restart looks like to a client) and lets them back.

const installed = join(process.cwd(), "node_modules", "postgres");
const GUARD = / {4}if \(!socket\) \{ \/\/ workcell patch[^\n]*\n(?:[^\n]*\n){3} {4}\}\n/;

/** A copy of the installed driver with the install-time patch taken out again. */
async function unpatchedDriver(dir: string): Promise<string> {
  const copy = join(dir, "node_modules", "postgres");
  await cp(installed, copy, { recursive: true });
  const file = join(copy, "src", "connection.js");
  const text = await readFile(file, "utf8");
  expect(text).toMatch(GUARD);
  await writeFile(file, text.replace(GUARD, ""));
  return pathToFileURL(join(copy, "src", "index.js")).href;
}

/** Cuts the guard test makes at most to meet the deferred-write fault. */
const MAX_CUTS = 30;

/** Waits for the child's stdout to close: every line it wrote has been read. */
const closed = (child: JsonLineChild) =>
  new Promise<number | null>((resolve) => {
    if (child.process.exitCode !== null && child.process.stdout?.readableEnded) {
      resolve(child.process.exitCode);
    } else child.process.once("close", (code) => resolve(code));
  });

describe("a database connection cut under load", () => {
  let database: TestDatabase;
  let proxy: PausableProxy;
  let dir: string;
  let child: JsonLineChild | undefined;
  beforeAll(async () => {
    database = await freshDatabase({ max: 1 });
    dir = await mkdtemp(join(tmpdir(), "driver-fault-"));
  });
  afterEach(async () => {
    await child?.kill9();
    child = undefined;
    await proxy?.close();
  });
  afterAll(async () => {
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  async function start(driver: string, guard: boolean): Promise<JsonLineChild> {
    const target = new URL(database.url);
    proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port) });
    const url = new URL(database.url);
    url.port = String(proxy.port);
    const args: DriverFaultChildArgs = { url: url.toString(), driver, guard, workers: 8 };
    child = spawnJsonLineChild(
      new URL("./driver-fault-child.ts", import.meta.url),
      args,
      "driver-fault child",
    );
    await child.next("committing");
    return child;
  }

  /**
   * The deferred write is a race with the cut (a write must be pending when the socket goes),
   * so one cut may miss it: cut every connection, and again each time the client serves
   * again, until `hit()` or MAX_CUTS.
   */
  async function cutUntil(c: JsonLineChild, hit: () => boolean): Promise<void> {
    for (let cut = 1; cut <= MAX_CUTS && !hit() && c.alive(); cut++) {
      const lost = c.count("lost");
      const serving = c.count("serving-again");
      proxy.cut();
      await pollUntil(() => c.count("lost") > lost || !c.alive(), { what: "the cut's failures" });
      proxy.resume();
      await pollUntil(() => c.count("serving-again") > serving || !c.alive() || hit(), {
        what: "the client serving again",
      });
    }
  }

  test("the unpatched driver dies of the deferred write (the crash the patch removes)", async () => {
    const c = await start(await unpatchedDriver(join(dir, "unpatched-a")), false);
    const exit = closed(c);
    await cutUntil(c, () => c.count("uncaught") > 0);
    expect(await exit).not.toBe(0);
    expect((await c.next("uncaught")).message).toContain("Cannot read properties of null");
  });

  // Not asserted here: that a patched client lives through 30 cuts in a row. Without the
  // guard it died in about one run in five, and with it too in the fresh-clone CI (an error
  // not thrown from a driver frame, not yet identified; decision 0111, issue 38 stays open).

  test("the process guard contains a driver fault the patch does not cover", async () => {
    const c = await start(await unpatchedDriver(join(dir, "unpatched-b")), true);
    // The deferred write is a race with the cut (a write must be pending when the socket
    // goes), so one cut may miss it: cut again once the client serves again, a bounded
    // number of times. The unpatched driver leaves the faulted connection's queries
    // unsettled (what the patch fixes), so only the guard's part is asserted: the process
    // lives and commits again.
    await cutUntil(c, () => c.count("contained") > 0);
    expect(c.count("contained")).toBeGreaterThan(0);
    await pollUntil(() => c.count("serving-again") >= c.count("lost"), { what: "serving again" });
    expect(c.alive()).toBe(true);
  });
});
