import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type LocalWorkcell, startLocalWorkcell } from "../../support/local-workcell-process.ts";

// Issue 32: on the local stack as scripts/local.sh starts it, a run in a thread and a
// second run in the same thread within the keep-warm window asking for another
// `agent.sandbox` or `agent.file_view` froze the whole process (the kept-warm replace
// destroyed from inside the sandbox lock's transaction, on a second connection the
// database could never serve). Both variants must complete both runs, and healthz must
// answer all along.

const RUN_DEADLINE_MS = 300_000;
/** A probe that gets no answer in this long counts as a hang (healthz bounds its own at 2 s). */
const PROBE_TIMEOUT_MS = 5_000;

type Run = { run_id: string; status: string; thread_id?: string };

async function call(wc: LocalWorkcell, token: string, method: string, path: string, body?: object) {
  const res = await fetch(`${wc.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function finished(wc: LocalWorkcell, token: string, runId: string): Promise<Run> {
  const deadline = Date.now() + RUN_DEADLINE_MS;
  for (;;) {
    const { body } = await call(wc, token, "GET", `/v1/runs/${runId}`);
    const run = body as unknown as Run;
    if (["succeeded", "failed", "cancelled"].includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Probes healthz back to back until stopped; every probe must answer 200. */
function healthWatch(wc: LocalWorkcell) {
  const failures: string[] = [];
  let probes = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      probes++;
      try {
        const res = await fetch(`${wc.url}/v1/healthz`, {
          signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
        });
        if (res.status !== 200) failures.push(`status ${res.status}: ${await res.text()}`);
        else await res.body?.cancel();
      } catch (error) {
        failures.push(String(error));
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { failures, probes };
    },
  };
}

const VARIANTS = [
  {
    name: "another tier",
    first: { sandbox: "container" },
    second: { sandbox: "process" },
  },
  {
    name: "another file view",
    first: { file_view: "workdir" },
    second: { file_view: "workspace" },
  },
] as const;

describe("the local Workcell: a thread's second run with other mounts, in the keep-warm window", () => {
  let wc: LocalWorkcell;

  beforeAll(async () => {
    wc = await startLocalWorkcell({ SANDBOX_KEEP_WARM_SECONDS: "600" });
  }, 600_000);
  afterAll(async () => {
    await wc?.stop();
  });

  test.each(VARIANTS)(
    "$name: both runs complete and healthz answers throughout",
    async (v) => {
      const token = await wc.token(`freeze-${v.name.replaceAll(" ", "-")}`);
      const watch = healthWatch(wc);
      try {
        const first = await call(wc, token, "POST", "/v1/runs", {
          input: "echo first > outputs/first.txt",
          agent: v.first,
        });
        expect(first.status, JSON.stringify(first.body)).toBe(202);
        const run1 = first.body.run as Run;
        const thread = first.body.thread as { thread_id: string };
        expect((await finished(wc, token, run1.run_id)).status).toBe("succeeded");
        const second = await call(wc, token, "POST", `/v1/threads/${thread.thread_id}/runs`, {
          input: "cat outputs/first.txt > outputs/second.txt",
          agent: v.second,
        });
        expect(second.status, JSON.stringify(second.body)).toBe(202);
        const run2 = (second.body.run ?? second.body) as Run;
        expect((await finished(wc, token, run2.run_id)).status).toBe("succeeded");
        // And the API still serves other calls afterwards.
        expect((await call(wc, token, "GET", `/v1/threads/${thread.thread_id}`)).status).toBe(200);
      } finally {
        const { failures, probes } = await watch.stop();
        expect(probes).toBeGreaterThan(0);
        expect(failures).toEqual([]);
      }
    },
    900_000,
  );
});
