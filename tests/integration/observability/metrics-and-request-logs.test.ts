import { EventSourceParserStream } from "eventsource-parser/stream";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LogLine } from "../../support/log-capture.ts";
import { delta } from "../../support/metrics-scrape.ts";
import { type ObservedStack, startObservedStack } from "./observed-stack.ts";

// One local Workcell (both planes, one registry, one ops listener) driven over HTTP as a
// client would: every counter must move by exactly what the test did, read from a real
// scrape parsed as the Prometheus text format; every request leaves one log line.

const ALICE = "metrics-alice";
const UPLOAD_BYTES = 1_000;
/** Sandboxes are created for real on a shared, loaded machine. */
const TEST_TIMEOUT_MS = 240_000;

let stack: ObservedStack;

beforeAll(async () => {
  stack = await startObservedStack();
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

async function api(
  method: string,
  path: string,
  o: { uid?: string | null; admin?: boolean; body?: unknown } = {},
): Promise<Response> {
  const uid = o.uid === undefined ? ALICE : o.uid;
  const headers: Record<string, string> = {};
  if (uid !== null) {
    headers.Authorization = `Bearer ${await stack.token(uid, { admin: o.admin ?? false })}`;
  }
  if (o.body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(`${stack.url}${path}`, {
    method,
    headers,
    ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
    signal: AbortSignal.timeout(60_000),
  });
}

type RunEvent = { type: string; data?: { status?: string } };

/** Reads the run's event stream until `until` says stop (or the stream ends). */
async function followEvents(
  runId: string,
  until: (event: RunEvent) => boolean = () => false,
): Promise<RunEvent[]> {
  const response = await api("GET", `/v1/runs/${runId}/events`);
  if (response.body === null) throw new Error("no event stream");
  const events: RunEvent[] = [];
  const frames = response.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  const reader = frames.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return events;
      const event = JSON.parse(value.data) as RunEvent;
      events.push(event);
      if (until(event)) return events;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

async function submit(input: string): Promise<{ runId: string; threadId: string }> {
  const response = await api("POST", "/v1/runs", { body: { input } });
  expect(response.status).toBe(202);
  const body = (await response.json()) as {
    run: { run_id: string };
    thread: { thread_id: string };
  };
  return { runId: body.run.run_id, threadId: body.thread.thread_id };
}

async function filesAccess(threadId: string): Promise<{ baseUrl: string; token: string }> {
  const response = await api("POST", `/v1/threads/${threadId}/files/access`, {
    body: { ops: ["read", "write"] },
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { base_url: string; token: string };
  return { baseUrl: body.base_url, token: body.token };
}

function dataPlane(
  access: { baseUrl: string; token: string },
  method: string,
  path: string,
  body?: Uint8Array,
): Promise<Response> {
  return fetch(`${access.baseUrl}/dp/v1/files/content?path=${encodeURIComponent(path)}`, {
    method,
    headers: { Authorization: `Bearer ${access.token}` },
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(60_000),
  });
}

function requestLine(requestId: string | null): LogLine {
  expect(requestId).toBeTruthy();
  const found = stack.lines.filter((l) => l.msg === "request" && l.request_id === requestId);
  expect(found).toHaveLength(1);
  return found[0] as LogLine;
}

const http = (plane: string, method: string, route: string, status: number) => ({
  plane,
  method,
  route,
  status: String(status),
});

describe("metrics and request logs of the local Workcell", () => {
  test(
    "a run and a data-plane upload move the counters by exactly what happened, and each request logs one line",
    async () => {
      const before = await stack.scrape();

      const refused = await api("POST", "/v1/runs", { uid: null, body: { input: "true" } });
      expect(refused.status).toBe(401);
      const missing = await api("GET", "/v1/runs/00000000-0000-4000-8000-000000000000");
      expect(missing.status).toBe(404);

      const { runId, threadId } = await submit("echo observed");
      const events = await followEvents(runId);
      expect(events.at(-1)).toMatchObject({ type: "run.completed", data: { status: "succeeded" } });
      const execs = events.filter((e) => e.type === "tool.completed").length;
      expect(execs).toBe(1);

      const access = await filesAccess(threadId);
      const bytes = new Uint8Array(UPLOAD_BYTES).fill(0x61);
      const put = await dataPlane(access, "PUT", "/observed.txt", bytes);
      expect(put.status).toBe(201);
      const clobber = await dataPlane(access, "PUT", "/observed.txt", bytes);
      expect(clobber.status).toBe(409);
      const get = await dataPlane(access, "GET", "/observed.txt");
      expect(get.status).toBe(200);
      expect((await get.arrayBuffer()).byteLength).toBe(UPLOAD_BYTES);

      const after = await stack.scrape();
      const moved = (name: string, labels?: Record<string, string>) =>
        delta(before, after, name, labels);
      const requests = "workcell_http_requests_total";
      expect(moved(requests, http("api", "POST", "/v1/runs", 401))).toBe(1);
      expect(moved(requests, http("api", "GET", "/v1/runs/{run_id}", 404))).toBe(1);
      expect(moved(requests, http("api", "POST", "/v1/runs", 202))).toBe(1);
      expect(moved(requests, http("api", "GET", "/v1/runs/{run_id}/events", 200))).toBe(1);
      expect(
        moved(requests, http("api", "POST", "/v1/threads/{thread_id}/files/access", 200)),
      ).toBe(1);
      expect(moved(requests, http("data_plane", "PUT", "/dp/v1/files/content", 201))).toBe(1);
      expect(moved(requests, http("data_plane", "PUT", "/dp/v1/files/content", 409))).toBe(1);
      expect(moved(requests, http("data_plane", "GET", "/dp/v1/files/content", 200))).toBe(1);
      // No concrete path (with its ids) ever becomes a label.
      expect(after.samples(requests).length).toBeGreaterThan(0);
      for (const sample of after.samples(requests)) {
        expect(sample.labels.route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}/);
      }
      expect(
        moved("workcell_http_request_duration_seconds", { plane: "api", route: "/v1/runs" }),
      ).toBe(2);

      expect(moved("workcell_runs_submitted_total")).toBe(1);
      expect(moved("workcell_runs_total", { status: "succeeded" })).toBe(1);
      expect(moved("workcell_runs_total")).toBe(1);
      expect(moved("workcell_run_queue_wait_seconds")).toBe(1);
      // The node's default tier (process where both are ready: decision 0106).
      const tier = stack.defaultTier;
      expect(moved("workcell_sandbox_creates_total", { tier })).toBe(1);
      expect(moved("workcell_sandbox_exec_seconds", { tier })).toBe(execs);
      expect(moved("workcell_data_plane_bytes_total", { direction: "in" })).toBe(UPLOAD_BYTES);
      expect(moved("workcell_data_plane_bytes_total", { direction: "out" })).toBe(UPLOAD_BYTES);
      expect(moved("workcell_workspace_quota_rejections_total")).toBe(0);
      expect(moved("workcell_sqs_errors_total")).toBe(0);
      // The process metrics come with the same scrape.
      expect(after.value("process_cpu_user_seconds_total")).toBeGreaterThan(0);

      // One line per request, 2xx and 4xx alike, on both planes.
      const submitted = stack.lines.find((l) => l.msg === "run submitted" && l.run_id === runId);
      expect(submitted).toMatchObject({ uid: ALICE });
      const submitLine = requestLine(String(submitted?.request_id));
      expect(submitLine).toMatchObject({
        method: "POST",
        route: "/v1/runs",
        status: 202,
        uid: ALICE,
      });
      expect(typeof submitLine.duration_ms).toBe("number");
      const unauthenticated = requestLine(refused.headers.get("x-request-id"));
      expect(unauthenticated).toMatchObject({
        method: "POST",
        route: "/v1/runs",
        status: 401,
        error_code: "unauthenticated",
      });
      expect(unauthenticated).not.toHaveProperty("uid");
      expect(requestLine(missing.headers.get("x-request-id"))).toMatchObject({
        method: "GET",
        route: "/v1/runs/{run_id}",
        status: 404,
        uid: ALICE,
        error_code: "not_found",
      });
      expect(requestLine(put.headers.get("x-request-id"))).toMatchObject({
        method: "PUT",
        route: "/dp/v1/files/content",
        status: 201,
        uid: ALICE,
      });
      expect(requestLine(clobber.headers.get("x-request-id"))).toMatchObject({
        route: "/dp/v1/files/content",
        status: 409,
        uid: ALICE,
        error_code: "conflict",
      });
      // Paths are the users' data: neither the file name nor the run id is in a request line.
      for (const line of stack.raw.filter((l) => l.includes('"msg":"request"'))) {
        expect(line).not.toContain("observed.txt");
        expect(line).not.toContain(runId);
      }
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "a quota refusal counts once and writes nothing",
    async () => {
      const { runId, threadId } = await submit("true");
      await followEvents(runId);
      const limited = await api("PUT", `/v1/admin/users/${ALICE}/limits`, {
        uid: "metrics-admin",
        admin: true,
        body: { workspace_bytes: 4_096 },
      });
      expect(limited.status).toBe(200);
      const access = await filesAccess(threadId);
      const before = await stack.scrape();

      const over = await dataPlane(access, "PUT", "/too-big.bin", new Uint8Array(64 * 1024));
      expect(over.status).toBe(507);
      expect(((await over.json()) as { error: { code: string } }).error.code).toBe(
        "quota_exceeded",
      );

      const after = await stack.scrape();
      expect(delta(before, after, "workcell_workspace_quota_rejections_total")).toBe(1);
      expect(delta(before, after, "workcell_data_plane_bytes_total", { direction: "in" })).toBe(0);
      expect(
        delta(
          before,
          after,
          "workcell_http_requests_total",
          http("data_plane", "PUT", "/dp/v1/files/content", 507),
        ),
      ).toBe(1);
      expect(requestLine(over.headers.get("x-request-id"))).toMatchObject({
        status: 507,
        uid: ALICE,
        error_code: "quota_exceeded",
      });
      // Nothing was written.
      expect((await dataPlane(access, "GET", "/too-big.bin")).status).toBe(404);
      const cleared = await api("PUT", `/v1/admin/users/${ALICE}/limits`, {
        uid: "metrics-admin",
        admin: true,
        body: {},
      });
      expect(cleared.status).toBe(200);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "a cancel of a running run counts one cancel request and one cancelled run",
    async () => {
      const before = await stack.scrape();
      const { runId } = await submit("sleep 120");
      await followEvents(runId, (event) => event.type === "tool.started");
      const cancel = await api("POST", `/v1/runs/${runId}/cancel`, { body: {} });
      expect(cancel.status).toBe(202);
      const events = await followEvents(runId);
      expect(events.at(-1)).toMatchObject({ type: "run.completed", data: { status: "cancelled" } });

      const after = await stack.scrape();
      expect(delta(before, after, "workcell_run_cancel_requests_total")).toBe(1);
      expect(delta(before, after, "workcell_runs_total", { status: "cancelled" })).toBe(1);
      expect(delta(before, after, "workcell_runs_total")).toBe(1);
      expect(delta(before, after, "workcell_runs_submitted_total")).toBe(1);
      expect(
        delta(
          before,
          after,
          "workcell_http_requests_total",
          http("api", "POST", "/v1/runs/{run_id}/cancel", 202),
        ),
      ).toBe(1);
    },
    TEST_TIMEOUT_MS,
  );

  test("no line of the whole session repeats a context key", () => {
    const keys = [
      "node_id",
      "component",
      "request_id",
      "uid",
      "run_id",
      "sandbox_id",
      "generation",
    ];
    expect(stack.raw.length).toBeGreaterThan(0);
    const repeated = stack.raw.filter((line) =>
      keys.some((key) => line.split(`"${key}":`).length > 2),
    );
    expect(repeated).toEqual([]);
    // The run worker's and the sandbox lifecycle lines carry their context once.
    const created = stack.lines.filter((l) => l.msg === "sandbox created");
    expect(created.length).toBeGreaterThan(0);
    for (const line of created) {
      expect(line).toMatchObject({ uid: ALICE, node_id: expect.any(String) });
      expect(typeof line.run_id).toBe("string");
      expect(typeof line.sandbox_id).toBe("string");
      expect(typeof line.generation).toBe("number");
    }
  });
});
