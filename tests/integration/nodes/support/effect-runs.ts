import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { expect } from "vitest";
import type { Run } from "../../../../shared/contracts/run.ts";
import type { Thread } from "../../../../shared/contracts/thread.ts";
import { agentRuns } from "../../../../shared/db/schema.ts";
import { uidDirname } from "../../../../shared/paths/uid-dirname.ts";
import { pollFor } from "../../../support/poll-until.ts";
import { type FunctionsHarness, jsonOf } from "../../functions/support/functions-harness.ts";

/** The file each run appends its tag to, in its thread's Workdir. */
export const EFFECTS = "effects.log";

export type Submitted = { run: Run; thread: Thread; uid: string; tag: string };

/**
 * Runs whose effect can be counted (outage tests: did a run happen, and only once?): each is
 * the one run of a new thread of a new user, and appends its tag to EFFECTS. `harness` is
 * read at each call (a suite makes its harness in beforeAll).
 */
export function effectRuns(harness: () => FunctionsHarness) {
  const until = <T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string) =>
    pollFor(read, ok, {
      what,
      timeoutMs: 90_000,
      intervalMs: 100,
      detail: (last) => `last: ${JSON.stringify(last)?.slice(0, 2000)}`,
    });

  /** Submits `label`'s run: its command appends the tag, then runs `andThen`. */
  const submit = async (
    label: string,
    options: { andThen?: string; agent?: Record<string, unknown> } = {},
  ): Promise<Submitted> => {
    const uid = `${label}-${randomBytes(3).toString("hex")}`;
    const tag = `${label}-${randomBytes(4).toString("hex")}`;
    const then = options.andThen === undefined ? "" : ` && ${options.andThen}`;
    const res = await harness().call("POST", "/v1/runs", {
      uid,
      body: { input: `echo ${tag} >> ${EFFECTS}${then}`, agent: options.agent },
    });
    expect(res.status, await res.clone().text()).toBe(202);
    const { run, thread } = await jsonOf<{ run: Run; thread: Thread }>(res);
    return { run, thread, uid, tag };
  };

  const runRow = async (runId: string) => {
    const [row] = await harness().db.select().from(agentRuns).where(eq(agentRuns.runId, runId));
    if (row === undefined) throw new Error("no run");
    return row;
  };

  const terminal = (runId: string) =>
    until(
      () => runRow(runId),
      (r) => ["succeeded", "failed", "cancelled"].includes(r.status),
      `run ${runId} to end`,
    );

  /** How many times the run's tag is in its thread's EFFECTS (0 when the file is missing). */
  const effectsOf = async (s: Submitted): Promise<number> => {
    const file = join(
      harness().dataRoot,
      "users",
      uidDirname(s.uid),
      "workspace",
      s.thread.workdir_path,
      EFFECTS,
    );
    const text = await readFile(file, "utf8").catch(() => "");
    return text.split("\n").filter((line) => line === s.tag).length;
  };

  return { until, submit, runRow, terminal, effectsOf };
}
