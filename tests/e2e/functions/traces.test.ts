import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import type { Run, Thread } from "../../../shared/contracts/index.ts";
import { type OtlpCollector, startOtlpCollector } from "../../support/otlp-collector.ts";
import { type Deployment, startDeployment } from "./support/deployment.ts";
import { runToEnd } from "./support/run-to-end.ts";
import type { ServerProcess } from "./support/server-process.ts";
import { expectDispatchTrace, oneSpan as one, SPAN_KIND } from "./support/traced-run.ts";

// Issue 15, item 2: one trace from the HTTP request that submits a run to its terminal
// event, across two processes (functions/entry/node.ts and agent-host/main.ts), each
// exporting with the SDK's real OTLP exporter to a collector in this test.

const SECRET = "traces-entry-secret-0123456789abcdef";

describe("traces across the planes", () => {
  let collector: OtlpCollector;
  let deployment: Deployment;
  let functions: ServerProcess;

  /** The caller's own trace: the request continues it (W3C traceparent). */
  const callerTraceId = randomBytes(16).toString("hex");
  const callerSpanId = randomBytes(8).toString("hex");

  beforeAll(async () => {
    const image = inject("sandboxImage");
    if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
    collector = await startOtlpCollector();
    deployment = await startDeployment({
      devJwtSecret: SECRET,
      name: "traces",
      image,
      logLevel: "warn",
      env: {
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.tracesUrl,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      },
    });
    ({ functions } = deployment);
  }, 120_000);

  afterAll(async () => {
    await deployment?.stop();
    await collector?.close();
  });

  function traceparent(spanId = callerSpanId) {
    return `00-${callerTraceId}-${spanId}-01`;
  }

  test("a submitted run is one trace: request → queue hop → claim, prepare, acquire, model call, exec → terminal event", async () => {
    const token = await mintDevToken(SECRET, "tracy");
    const res = await fetch(`${functions.url}/v1/runs`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        traceparent: traceparent(),
      },
      body: JSON.stringify({ input: "echo traced" }),
    });
    expect(res.status).toBe(202);
    const { run, thread } = (await res.json()) as { run: Run; thread: Thread };
    expect((await runToEnd(functions.url, token, run.run_id)).status).toBe("succeeded");

    // A data-plane request of the same caller continues the caller's trace too.
    const access = await fetch(`${functions.url}/v1/threads/${thread.thread_id}/files/access`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ops: ["read"] }),
    });
    const { base_url, token: capability } = (await access.json()) as {
      base_url: string;
      token: string;
    };
    const dpSpanParent = randomBytes(8).toString("hex");
    const listing = await fetch(`${base_url}/dp/v1/files?path=/`, {
      headers: { authorization: `Bearer ${capability}`, traceparent: traceparent(dpSpanParent) },
    });
    expect(listing.status).toBe(200);

    const F = "workcell-functions";
    const A = "workcell-agent-host";
    const spans = (
      await collector.until((all) => {
        const mine = all.filter((s) => s.traceId === callerTraceId);
        return (
          mine.some((s) => s.service === A && s.name === "run.execute") &&
          mine.some((s) => s.service === A && s.name === "GET /dp/v1/files")
        );
      })
    ).filter((s) => s.traceId === callerTraceId);

    // functions/ process: the request continues the caller's span, the hop is its child;
    // agent-host process: the message's context is the consumer's parent (the queue hop).
    const { consume, execute } = expectDispatchTrace(spans, {
      entryService: F,
      agentHostService: A,
      callerSpanId,
      runId: run.run_id,
    });
    expect(one(spans, A, "run.claim").parentSpanId).toBe(consume.spanId);
    expect(execute.attributes["workcell.run_status"]).toBe("succeeded");
    const prepare = one(spans, A, "run.prepare");
    expect(prepare.parentSpanId).toBe(execute.spanId);
    for (const step of ["workdir.prepare", "skills.refresh", "sandbox.acquire"]) {
      expect(one(spans, A, step).parentSpanId).toBe(prepare.spanId);
    }
    expect(one(spans, A, "sandbox.acquire").attributes["workcell.sandbox_created"]).toBe(true);
    // The shell model: two model calls (the command, then the reply) and one exec.
    const calls = spans.filter((s) => s.service === A && s.name === "model.call");
    expect(calls.length).toBe(2);
    for (const call of calls) expect(call.parentSpanId).toBe(execute.spanId);
    const exec = one(spans, A, "sandbox.exec");
    expect(exec.parentSpanId).toBe(execute.spanId);
    expect(exec.attributes).toMatchObject({
      "workcell.exec_status": "exited",
      "process.exit.code": 0,
    });
    expect(one(spans, A, "run.finish").parentSpanId).toBe(execute.spanId);

    // The data-plane request is a server span under the span its caller named.
    const dp = one(spans, A, "GET /dp/v1/files");
    expect(dp.kind).toBe(SPAN_KIND.server);
    expect(dp.parentSpanId).toBe(dpSpanParent);

    // Every span of the trace is linked: each parent is in the trace, or is the caller's.
    const ids = new Set(spans.map((s) => s.spanId));
    for (const s of spans) {
      expect([...ids, callerSpanId, dpSpanParent]).toContain(s.parentSpanId);
    }
  }, 120_000);
});
