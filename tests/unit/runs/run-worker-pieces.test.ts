import { describe, expect, test } from "vitest";
import { RunControl, RunStopped } from "../../../agent-host/runs/execute/run-control.ts";
import { runEndingOf, stoppedBeforeStart } from "../../../agent-host/runs/execute/run-ending.ts";
import {
  DEFAULT_RUN_WORKER_LIMITS,
  modelConfigFromEnv,
  NODE_SHUTDOWN_ERROR,
  RUN_CANCEL_CHANNEL,
  RUN_EVENTS_CHANNEL,
  resolveRunWorkerLimits,
} from "../../../agent-host/runs/index.ts";
import { receiveBackoffMs } from "../../../agent-host/runs/queue/receive-backoff.ts";
import * as sharedRuns from "../../../shared/runs/index.ts";
import { treeLockKey } from "../../../shared/runs/tree-lock.ts";

describe("NOTIFY channels", () => {
  test("are the names of the NOTIFY contract (0004), defined once in shared/runs", () => {
    // Other writers (tests, operators' scripts) NOTIFY these literal names.
    expect(sharedRuns.RUN_EVENTS_CHANNEL).toBe("workcell_run_events");
    expect(sharedRuns.RUN_CANCEL_CHANNEL).toBe("workcell_run_cancel");
    // agent-host/runs re-exports them for its existing importers.
    expect(RUN_CANCEL_CHANNEL).toBe(sharedRuns.RUN_CANCEL_CHANNEL);
    expect(RUN_EVENTS_CHANNEL).toBe(sharedRuns.RUN_EVENTS_CHANNEL);
  });
});

describe("receiveBackoffMs", () => {
  test("grows exponentially from the minimum and stops at the maximum", () => {
    const top = () => 0.999_999;
    expect(receiveBackoffMs(0, 500, 30_000, top)).toBe(0);
    expect(receiveBackoffMs(1, 500, 30_000, top)).toBe(500);
    expect(receiveBackoffMs(2, 500, 30_000, top)).toBe(1000);
    expect(receiveBackoffMs(4, 500, 30_000, top)).toBe(4000);
    expect(receiveBackoffMs(50, 500, 30_000, top)).toBe(30_000);
    expect(receiveBackoffMs(10_000, 500, 30_000, top)).toBe(30_000);
  });

  test("jitters between the minimum and the ceiling", () => {
    expect(receiveBackoffMs(4, 500, 30_000, () => 0)).toBe(500);
    expect(receiveBackoffMs(4, 500, 30_000, () => 0.5)).toBe(2250);
  });
});

describe("runEndingOf", () => {
  const ok = { status: "succeeded", finalText: "hi" } as const;
  const cancelled = { status: "cancelled", finalText: "" } as const;

  test("the loop's own ending, when nothing stopped the run", () => {
    expect(runEndingOf(ok, { reason: undefined, leaseLost: false })).toEqual({
      status: "succeeded",
      finalText: "hi",
    });
    const error = { code: "model_timeout", message: "slow" };
    expect(
      runEndingOf(
        { status: "failed", finalText: "", error },
        { reason: undefined, leaseLost: false },
      ),
    ).toEqual({ status: "failed", error });
  });

  test("a shell-model run carries its command's exit code; a model run does not", () => {
    const exited3 = { ...ok, lastExitCode: 3 };
    const stop = { reason: undefined, leaseLost: false };
    expect(runEndingOf(exited3, stop, true)).toEqual({
      status: "succeeded",
      finalText: "hi",
      exitCode: 3,
    });
    expect(runEndingOf(exited3, stop, false)).toEqual({ status: "succeeded", finalText: "hi" });
    expect(runEndingOf(ok, stop, true)).toEqual({ status: "succeeded", finalText: "hi" });
  });

  test("a user cancel is cancelled; a shutdown is failed/node_shutdown", () => {
    expect(runEndingOf(cancelled, { reason: "cancel", leaseLost: false })).toEqual({
      status: "cancelled",
    });
    expect(runEndingOf(cancelled, { reason: "shutdown", leaseLost: false })).toEqual({
      status: "failed",
      error: NODE_SHUTDOWN_ERROR,
    });
    // A run that finished by itself before the shutdown reached it keeps its ending.
    expect(runEndingOf(ok, { reason: "shutdown", leaseLost: false })?.status).toBe("succeeded");
  });

  test("a lost lease records nothing, whatever came first", () => {
    expect(runEndingOf(ok, { reason: undefined, leaseLost: true })).toBeUndefined();
    expect(runEndingOf(cancelled, { reason: "cancel", leaseLost: true })).toBeUndefined();
    expect(stoppedBeforeStart("lease_lost")).toBeUndefined();
    expect(stoppedBeforeStart("cancel")).toEqual({ status: "cancelled" });
    expect(stoppedBeforeStart("shutdown")?.error?.code).toBe("node_shutdown");
  });
});

describe("RunControl", () => {
  test("keeps the first reason, aborts once, and remembers a lost lease", () => {
    const control = new RunControl();
    control.stop("cancel");
    control.stop("shutdown");
    control.stop("lease_lost");
    expect(control.reason).toBe("cancel");
    expect(control.leaseLost).toBe(true);
    expect(control.signal.aborted).toBe(true);
    expect(control.signal.reason).toBeInstanceOf(RunStopped);
    expect((control.signal.reason as RunStopped).reason).toBe("cancel");
  });
});

describe("resolveRunWorkerLimits", () => {
  test("defaults are consistent", () => {
    expect(resolveRunWorkerLimits()).toEqual(DEFAULT_RUN_WORKER_LIMITS);
  });

  test("refuses a heartbeat that could let a healthy lease expire, and other nonsense", () => {
    expect(() => resolveRunWorkerLimits({ leaseTtlMs: 1000, heartbeatIntervalMs: 500 })).toThrow(
      /heartbeatIntervalMs/,
    );
    expect(() => resolveRunWorkerLimits({ concurrency: 0 })).toThrow(/concurrency/);
    expect(() => resolveRunWorkerLimits({ receiveWaitSeconds: 21 })).toThrow(/receiveWaitSeconds/);
    // The API's answer is unpaged: no worker may store more than the table's bound.
    expect(() => resolveRunWorkerLimits({ changesMaxRecorded: 10_001 })).toThrow(
      /changesMaxRecorded/,
    );
  });
});

describe("modelConfigFromEnv", () => {
  test("no base URL is the shell model; a base URL is an openai-compatible server", () => {
    expect(modelConfigFromEnv({})).toEqual({ kind: "shell" });
    expect(
      modelConfigFromEnv({
        MODEL_BASE_URL: "http://127.0.0.1:11434/v1",
        MODEL_NAME: "llama3.1",
        MODEL_API_KEY: "k",
      }),
    ).toMatchObject({
      kind: "openai-compatible",
      baseUrl: "http://127.0.0.1:11434/v1",
      model: "llama3.1",
      apiKey: "k",
    });
    expect(
      modelConfigFromEnv({
        MODEL_BASE_URL: "http://127.0.0.1:11434/v1",
        MODEL_NAME: "llama3.1",
        MODEL_REQUEST_TIMEOUT_SECONDS: 300,
      }),
    ).toMatchObject({ requestTimeoutMs: 300_000 });
    expect(() => modelConfigFromEnv({ MODEL_BASE_URL: "http://127.0.0.1:11434/v1" })).toThrow(
      /MODEL_NAME: is required when MODEL_BASE_URL is set/,
    );
  });
});

describe("treeLockKey", () => {
  test("namespaces the key by uid and scope; the scope (a uuid) ends it unambiguously", () => {
    const s1 = "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
    const s2 = "1f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
    const text = (uid: string, scope: string) =>
      JSON.stringify(treeLockKey(uid, scope).queryChunks);
    expect(text("oidc:a", s1)).toContain(`workcell.runs.tree:oidc:a:${s1}`);
    expect(text("oidc:a", s1)).not.toBe(text("oidc:a", s2));
    expect(text("a", s1)).not.toBe(text("b", s1));
  });
});
