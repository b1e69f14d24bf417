import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { FilesAccessResponse } from "../../../shared/contracts/files-access.ts";
import type { Project } from "../../../shared/contracts/project.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { freePort } from "../../setup/free-port.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

// The one-command local Workcell (`npm start`: PostgreSQL, fauxqs, the data plane and the
// functions app in one process) driven as a user drives it: a dev token from
// `npm run token`, a linked project, a thread, a run, its cancellation ending the event
// stream, and files through the capability the API hands out.

const ROOT = join(import.meta.dirname, "../../..");
const run = promisify(execFile);

let dataDir: string;
let workcell: ServerProcess;
let token: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "workcell-local-"));
  const port = await freePort();
  workcell = await startServerProcess({
    command: process.execPath,
    args: [join(ROOT, "infra/local/main.ts")],
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      AWS_EMULATOR_PORT: String(await freePort()),
      DATA_PLANE_PORT: String(await freePort()),
      // Not the default 9464: parallel tests (and other engineers) share the host.
      METRICS_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
    },
    cwd: ROOT,
    url: `http://127.0.0.1:${port}`,
    readyPath: "/v1/healthz",
    readyTimeoutMs: 60_000,
  });
  const minted = await run(process.execPath, [
    join(ROOT, "infra/local/mint-token.ts"),
    "alice",
    "--data-dir",
    dataDir,
  ]);
  token = minted.stdout.trim();
}, 90_000);
afterAll(async () => {
  await workcell?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

async function api<T>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${workcell.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text === "" ? undefined : JSON.parse(text)) as T };
}

test("health, a linked project, a thread, a run and its cancelled event stream", async () => {
  const health = await fetch(`${workcell.url}/v1/healthz`);
  expect(health.status, workcell.output()).toBe(200);

  await mkdir(join(dataDir, "data-root/users/alice/workspace/code/app"), { recursive: true });
  const project = await api<Project>("POST", "/v1/projects", { workdir_path: "code/app" });
  expect(project.status).toBe(201);
  expect((await api("POST", "/v1/projects", { workdir_path: "code/missing" })).status).toBe(404);

  const thread = await api<Thread>("POST", "/v1/threads", { project_id: project.body.id });
  expect(thread.body.workdir_path).toBe("code/app");
  const submitted = await api<Run>("POST", `/v1/threads/${thread.body.thread_id}/runs`, {
    input: "sleep 60",
  });
  expect(submitted.status).toBe(202);

  const stream = await fetch(`${workcell.url}/v1/runs/${submitted.body.run_id}/events`, {
    headers: { authorization: `Bearer ${token}` },
  });
  // The local Workcell executes runs: the cancel finds it pending (ended at once) or
  // running (cancel requested, the worker kills `sleep` and ends it cancelled).
  const cancel = await api<Run>("POST", `/v1/runs/${submitted.body.run_id}/cancel`);
  expect(cancel.status).toBe(202);
  expect(cancel.body.status === "cancelled" || cancel.body.cancel_requested).toBe(true);
  const text = await stream.text();
  expect(text).toContain("event: run.completed");
  expect(text).toContain('"status":"cancelled"');
});

test("files of a thread's Workdir through the capability from the API", async () => {
  const thread = await api<Thread>("POST", "/v1/threads", {});
  const grant = await api<FilesAccessResponse>(
    "POST",
    `/v1/threads/${thread.body.thread_id}/files/access`,
    {
      ops: ["read", "write"],
    },
  );
  expect(grant.status).toBe(200);
  const auth = { authorization: `Bearer ${grant.body.token}` };
  const put = await fetch(`${grant.body.base_url}/dp/v1/files/content?path=/notes.md`, {
    method: "PUT",
    headers: auth,
    body: "# hello",
  });
  expect(put.status).toBe(201);
  const get = await fetch(`${grant.body.base_url}/dp/v1/files/content?path=/notes.md`, {
    headers: auth,
  });
  expect(await get.text()).toBe("# hello");
});
