import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { pollUntil } from "../../support/poll-until.ts";

// Issue 32 (5): scripts/ensure-dockerd.sh against a fake engine (its socket, pid file,
// log and daemon all overridden; the machine's real dockerd is never touched). A slow
// engine (a socket that accepts and never answers, or a live pid in the pid file) gets
// waited for and no second daemon is started, and its log is not truncated; with no engine
// at all, the daemon is started in a session of its own with its log appended to.

const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, "../../../scripts/ensure-dockerd.sh");
const FAKE_DOCKERD = join(import.meta.dirname, "../../support/fake-dockerd.py");
const OLD_LOG = "a line the running engine wrote\n";

let dir: string;
let silent: Server | undefined;
const held: Socket[] = [];
const started: number[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "workcell-ensure-dockerd-"));
  await writeFile(join(dir, "log"), OLD_LOG);
});
afterEach(async () => {
  for (const s of held.splice(0)) s.destroy();
  await new Promise<void>((resolve) => (silent ? silent.close(() => resolve()) : resolve()));
  silent = undefined;
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  await rm(dir, { recursive: true, force: true });
});

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DOCKER_HOST: `unix://${join(dir, "docker.sock")}`,
    WORKCELL_DOCKERD_PIDFILE: join(dir, "docker.pid"),
    WORKCELL_DOCKERD_LOG: join(dir, "log"),
    WORKCELL_DOCKERD: FAKE_DOCKERD,
    FAKE_DOCKERD_MARKER: join(dir, "started"),
    WORKCELL_DOCKER_WAIT_SECONDS: "3",
    ...extra,
  };
}

async function ensure(extra: Record<string, string> = {}) {
  return run("bash", [SCRIPT], { env: env(extra), timeout: 120_000 }).then(
    (out) => ({ code: 0, ...out }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

/** A daemon that was started, as the fake recorded it (none: []). */
async function startedDaemons(): Promise<Array<{ sid: number; pid: number; args: string[] }>> {
  const text = await readFile(join(dir, "started"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));
}

describe("ensure-dockerd.sh", () => {
  test("a socket that accepts and never answers: waits, starts no second daemon, keeps the log", async () => {
    silent = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent?.listen(join(dir, "docker.sock"), resolve));
    const out = await ensure();
    expect(out.code).toBe(1);
    expect(out.stdout).toContain("does not answer yet; waiting");
    expect(out.stderr).toContain("not starting a second one");
    expect(await startedDaemons()).toEqual([]);
    expect(await readFile(join(dir, "log"), "utf8")).toBe(OLD_LOG);
  }, 120_000);

  test("a live daemon in the pid file and no socket yet: waits, starts no second daemon", async () => {
    const sleeper = spawn("sleep", ["600"], { stdio: "ignore" });
    if (sleeper.pid === undefined) throw new Error("could not start sleep");
    started.push(sleeper.pid);
    await writeFile(join(dir, "docker.pid"), `${sleeper.pid}\n`);
    const out = await ensure();
    expect(out.code).toBe(1);
    expect(out.stdout).toContain(`pid ${sleeper.pid}`);
    expect(await startedDaemons()).toEqual([]);
    expect(await readFile(join(dir, "log"), "utf8")).toBe(OLD_LOG);
  }, 120_000);

  test("a daemon that comes up while it waits is taken, and no second one started", async () => {
    // The engine is slow to start: its socket answers only after a few seconds.
    const late = spawn(FAKE_DOCKERD, [`--host=unix://${join(dir, "late.sock")}`], {
      env: { ...process.env, FAKE_DOCKERD_MARKER: join(dir, "late-marker") },
      stdio: "ignore",
    });
    if (late.pid === undefined) throw new Error("could not start the late engine");
    started.push(late.pid);
    await writeFile(join(dir, "docker.pid"), `${late.pid}\n`);
    const out = await ensure({
      DOCKER_HOST: `unix://${join(dir, "late.sock")}`,
      WORKCELL_DOCKER_WAIT_SECONDS: "60",
    });
    expect(out.code).toBe(0);
    expect(await startedDaemons()).toEqual([]);
  }, 120_000);

  test("no engine (a stale socket file at most): starts one in its own session, log appended", async () => {
    // A socket file nobody listens on: what a crashed dockerd leaves behind.
    await run("python3", [
      "-c",
      "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
      join(dir, "docker.sock"),
    ]);
    const out = await ensure({ WORKCELL_DOCKER_WAIT_SECONDS: "60" });
    expect(out.code, out.stderr).toBe(0);
    await pollUntil(async () => (await startedDaemons()).length > 0);
    const daemons = await startedDaemons();
    expect(daemons).toHaveLength(1);
    const daemon = daemons[0];
    if (daemon === undefined) throw new Error("unreachable");
    started.push(daemon.pid);
    const mySession = Number(
      (await readFile("/proc/self/stat", "utf8")).split(") ")[1]?.split(" ")[3],
    );
    expect(daemon.sid).not.toBe(mySession);
    expect(daemon.sid).toBe(daemon.pid);
    expect(daemon.args).toContain(`--pidfile=${join(dir, "docker.pid")}`);
    expect(await readFile(join(dir, "log"), "utf8")).toMatch(
      new RegExp(`^${OLD_LOG}fake dockerd serving`),
    );
    // Run again: the engine answers, nothing more is started.
    expect((await ensure()).code).toBe(0);
    expect(await startedDaemons()).toHaveLength(1);
  }, 120_000);
});
