import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { runSandboxProbe } from "../../../agent-host/sandbox/process/run-sandbox-probe.ts";
import { hostProcessesWith } from "../../support/host-processes.ts";

// The node's bubblewrap probes (preflight's smoke sandbox, the Runtime Assets' probes) are
// stopped by their deadline or by agent-host stopping. bwrap 0.8's child waits, right
// after its clone, for its parent to write the new user namespace's uid map, before it
// arms --die-with-parent: killing only the parent in that window left the child blocked
// forever as an orphan on the host. Stopping a probe must end every process of it.

/** A bwrap with a new user namespace whose command would run for a minute. */
const probeArgs = (mark: string) => [
  "--unshare-all",
  "--die-with-parent",
  "--clearenv",
  "--setenv",
  "PROBE_MARK",
  mark,
  ...["/usr", "/lib", "/lib64", "/bin"].flatMap((d) => ["--ro-bind-try", d, d]),
  "--",
  "/bin/sleep",
  "60",
];

describe("bubblewrap probes: stopping one ends all of it", () => {
  it("a probe aborted at any point of its start leaves no process on the host", async () => {
    const mark = `probe-${randomUUID()}`;
    const runs = [];
    for (let i = 0; i < 40; i++) {
      const stop = new AbortController();
      const run = runSandboxProbe("bwrap", probeArgs(mark), {
        timeoutMs: 60_000,
        signal: stop.signal,
        env: {},
      });
      // Aborted from right at the spawn to a few milliseconds in: the window between
      // bwrap's clone and its uid-map write is among these (not a synchronisation: every
      // delay must end with nothing left).
      if (i % 5 > 0) await sleep(i % 5);
      stop.abort();
      runs.push(run);
    }
    const ended = await Promise.all(runs);
    expect(ended.every((r) => r.stopped && r.code !== 0)).toBe(true);
    expect(await hostProcessesWith(mark)).toEqual([]);
  });

  it("a probe past its deadline is ended with all of its processes", async () => {
    const mark = `probe-${randomUUID()}`;
    const run = await runSandboxProbe("bwrap", probeArgs(mark), { timeoutMs: 300, env: {} });
    expect(run).toMatchObject({ stopped: true, code: null, signal: "SIGKILL" });
    expect(await hostProcessesWith(mark)).toEqual([]);
  });

  it("a probe that ends by itself reports its exit and output", async () => {
    const run = await runSandboxProbe(
      "bwrap",
      [
        "--unshare-all",
        "--die-with-parent",
        ...["/usr", "/lib", "/lib64", "/bin"].flatMap((d) => ["--ro-bind-try", d, d]),
        "--",
        "/bin/echo",
        "inside",
      ],
      { timeoutMs: 60_000, env: {} },
    );
    expect(run).toMatchObject({ stopped: false, code: 0, stdout: "inside\n" });
  });

  it("a command that cannot be started is reported, not waited for", async () => {
    const run = await runSandboxProbe("/nonexistent/bwrap", [], { timeoutMs: 60_000, env: {} });
    expect(run.error?.message).toMatch(/ENOENT/);
    expect(run.stopped).toBe(false);
  });
});
