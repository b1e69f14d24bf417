import { eq } from "drizzle-orm";
import { pino } from "pino";
import { afterEach, expect, it } from "vitest";
import { sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId as sandboxIdOf } from "../../../shared/identity/sandbox-id.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { type RunWorld, runWorld, UID } from "./run-harness.ts";
import { gate, scriptedModels, waitThenSay } from "./scripted-models.ts";

// Two root runs of one thread share its sandbox (one runtime scope, docs/architecture.md
// §4.5). Tree cleanup of the first to end must keep the sandbox for the other (`kept`);
// and a run claimed while a cleanup destroys the sandbox ends on a new generation or
// with stale_generation, never with a command run in the destroyed one.

let world: RunWorld | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

type LogLine = { msg?: string; run_id?: string; level?: number };

/** The worker's own log as a stream of records: the hook for "its cleanup decided". */
function capturedLogger() {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: "info" },
    { write: (chunk: string) => lines.push(JSON.parse(chunk) as LogLine) },
  );
  return { logger, lines };
}

async function sandboxRow(w: RunWorld, threadId: string) {
  const [row] = await w.db
    .select()
    .from(sandboxes)
    .where(eq(sandboxes.sandboxId, sandboxIdOf(UID, threadId)));
  return row;
}

it("two concurrent root runs of one thread: the first to end keeps the sandbox for the other", async () => {
  const w = await runWorld();
  world = w;
  const { logger, lines } = capturedLogger();
  // The long root acquires the sandbox with a command, then waits in its model call (not
  // in an exec: the execution lease would hold the short root's command behind it).
  const release = gate();
  const models = scriptedModels((request) =>
    request.input === "long"
      ? [
          { toolCalls: [{ name: "bash", arguments: { command: "echo long-ran" } }] },
          waitThenSay(() => release.promise, "long done"),
        ]
      : [
          { toolCalls: [{ name: "bash", arguments: { command: "echo short-ran" } }] },
          { text: "short done" },
        ],
  );
  // A long lease: under a loaded machine a short one can expire while the long root waits.
  await w.worker({ model: models.factory, limits: { leaseTtlMs: 60_000 }, extra: { logger } });
  const thread = await w.thread(await w.project());

  const long = await w.submit(thread, "long");
  await w.waitForEvent(long, "tool.completed");
  const before = await sandboxRow(w, thread);
  expect(before?.state).toBe("running");

  const short = await w.submit(thread, "short");
  expect((await w.waitForRun(short)).status).toBe("succeeded");
  // The short run's cleanup has decided: the other root runs in the sandbox.
  await expect
    .poll(
      () => lines.some((l) => l.run_id === short && l.msg === "scope still in use; sandbox kept"),
      { timeout: 30_000 },
    )
    .toBe(true);
  expect(lines.some((l) => l.run_id === short && /sandbox destroyed/.test(l.msg ?? ""))).toBe(
    false,
  );

  // The same generation, still running, for the long root, which is still running.
  const after = await sandboxRow(w, thread);
  expect(after).toMatchObject({ state: "running", generation: before?.generation });
  expect(await containersOfNode(w.docker, w.nodeId)).toHaveLength(1);
  expect((await w.run(long)).status).toBe("running");

  // The last root to end cleans up: the sandbox goes with it.
  release.open();
  expect((await w.waitForRun(long)).status).toBe("succeeded");
  await w.waitForNoContainers();
  expect((await sandboxRow(w, thread))?.state).toBe("destroyed");
});

it("a run claimed while the thread's cleanup destroys its sandbox: a new generation or stale_generation", async () => {
  const w = await runWorld();
  world = w;
  const { logger, lines } = capturedLogger();
  await w.worker({ limits: { concurrency: 4 }, extra: { logger } });
  const project = await w.project();
  const ROUNDS = 4;
  const threads = await Promise.all(Array.from({ length: ROUNDS }, () => w.thread(project)));

  const outcomes = await Promise.all(
    threads.map(async (thread, i) => {
      const first = await w.submit(thread, `echo first-${i}`);
      // Dispatched as the first run ends: its claim races the first run's tree cleanup.
      await w.waitForRun(first, (r) => r.status !== "pending" && r.status !== "running");
      const firstRow = await sandboxRow(w, thread);
      const second = await w.submit(thread, `echo second-${i}`);
      const ended = await w.waitForRun(second);
      const secondRow = await sandboxRow(w, thread);
      return { i, thread, first, firstGeneration: firstRow?.generation ?? 0, ended, secondRow };
    }),
  );

  for (const { i, thread, first, firstGeneration, ended, secondRow } of outcomes) {
    if (ended.status === "succeeded") {
      // It ran its command for real: in a generation of its own (no keep-warm window
      // here, so the first run's was destroyed), or in the first's when it was already
      // running as the first's cleanup decided, which then kept the sandbox for it.
      expect((await w.assistantMessages(thread)).at(-1)).toBe(`second-${i}\n`);
      const kept = lines.some(
        (l) => l.run_id === first && l.msg === "scope still in use; sandbox kept",
      );
      if (!kept) expect(secondRow?.generation ?? 0).toBeGreaterThan(firstGeneration);
    } else {
      // Lost the race to the destroy: told so, never a plain "retry the run".
      expect(ended.status).toBe("failed");
      expect(["stale_generation", "tool_interrupted"]).toContain(
        (ended.error as { code?: string } | null)?.code,
      );
    }
  }
  // Every cleanup finished: no sandbox left behind.
  await w.waitForNoContainers();
});
