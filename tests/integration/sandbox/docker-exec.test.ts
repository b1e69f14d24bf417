import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { open, readdir, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type {
  ExecRequest,
  ExecResult,
  SandboxInstance,
} from "../../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { createTestSandbox, dockerForTest, materializeWorkdir } from "./sandbox-fixture.ts";

const signal = () => AbortSignal.timeout(60_000);

// One sandbox for the whole file: every exec test is independent of the others, and
// the ones that kill processes check that nothing of theirs is left afterwards.
describe("DockerDriver exec", () => {
  let docker: Docker;
  let dataRoot: DataRoot;
  let nodeId: string;
  let driver: DockerDriver;
  let sandbox: SandboxInstance;
  let workdir: string;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    ({ docker, nodeId, driver } = dockerForTest(dataRoot.path, {
      maxOutputBytesPerStream: 64 * 1024,
      killGraceMs: 1_000,
    }));
    const uid = "exec-user";
    const workdirPath = "work";
    workdir = join(await materializeWorkdir(dataRoot.path, uid, workdirPath), workdirPath);
    sandbox = await createTestSandbox(driver, { uid, workdirPath, nodeId }, signal());
  });

  afterAll(async () => {
    await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
    await dataRoot.remove();
  });

  async function run(request: ExecRequest, s: AbortSignal = signal()): Promise<ExecResult> {
    const out = await driver.exec(sandbox, request, s);
    if (!out.ok) throw new Error("sandbox gone");
    return out.result;
  }

  const text = (r: ExecResult) => ({
    out: r.stdout.bytes.toString(),
    err: r.stderr.bytes.toString(),
  });

  /** Processes in the sandbox other than docker-init, the keep-alive and the ps itself. */
  async function strayProcesses(): Promise<string[]> {
    const r = await run({ cmd: ["ps", "-o", "pid,comm,args"] });
    return text(r)
      .out.trim()
      .split("\n")
      .slice(1)
      .filter((line) => !/docker-init|sleep 2147483647|ps -o/.test(line));
  }

  it("reports exit codes", async () => {
    expect(await run({ cmd: ["true"] })).toMatchObject({ status: "exited", exitCode: 0 });
    expect(await run({ cmd: ["sh", "-c", "exit 3"] })).toMatchObject({
      status: "exited",
      exitCode: 3,
    });
    expect(await run({ cmd: ["sh", "-c", "kill -TERM $$"] })).toMatchObject({ exitCode: 143 });
  });

  it("creates files 0600 and directories 0700 (umask 077), owned by 1000:1000", async () => {
    const r = await run({
      cmd: ["sh", "-c", "umask; touch umask-f; mkdir umask-d; stat -c '%a %u:%g' umask-f umask-d"],
    });
    expect(text(r).out).toBe("0077\n600 1000:1000\n700 1000:1000\n");
  });

  it("offers no writable /dev/shm or /dev/mqueue, and nothing lands there", async () => {
    const r = await run({
      cmd: [
        "sh",
        "-c",
        "touch /dev/shm/x; echo shm=$?; touch /dev/mqueue/x; echo mq=$?; ls -A /dev/mqueue | wc -l; grep -c ' /dev/shm ' /proc/self/mountinfo",
      ],
    });
    const out = text(r).out;
    expect(out).toMatch(/shm=[1-9]/);
    expect(out).toMatch(/mq=[1-9]/);
    expect(out).toMatch(/\n0\n0\n$/);
  });

  it("reports a missing program as a non-zero exit", async () => {
    const r = await run({ cmd: ["no-such-program"] });
    expect(r.status).toBe("exited");
    expect(r.exitCode).not.toBe(0);
  });

  it("keeps stdout and stderr apart", async () => {
    const r = await run({ cmd: ["sh", "-c", "echo out; echo err >&2; echo out2"] });
    expect(text(r)).toEqual({ out: "out\nout2\n", err: "err\n" });
  });

  it("feeds stdin and closes it", async () => {
    const input = randomBytes(300_000).toString("base64");
    const r = await run({ cmd: ["sh", "-c", "wc -c; sha256sum"], stdin: input.slice(0, 1000) });
    expect(text(r).out.split("\n")[0]?.trim()).toBe("1000");
    const echoed = await run({ cmd: ["cat"], stdin: "hello\n", maxOutputBytesPerStream: 10 });
    expect(text(echoed).out).toBe("hello\n");
    const big = await run({ cmd: ["wc", "-c"], stdin: input });
    expect(text(big).out.trim()).toBe(String(input.length));
  });

  it("caps each stream, streams what it keeps and reports what it dropped", async () => {
    const chunks: Buffer[] = [];
    const r = await run({
      cmd: ["sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' a; echo tail >&2"],
      maxOutputBytesPerStream: 1000,
      onStdout: (c) => chunks.push(c),
    });
    expect(r.status).toBe("exited");
    expect(r.exitCode).toBe(0);
    expect(r.stdout.bytes.toString()).toBe("a".repeat(1000));
    expect(r.stdout).toMatchObject({ totalBytes: 1_000_000, droppedBytes: 999_000 });
    expect(Buffer.concat(chunks)).toEqual(r.stdout.bytes);
    expect(r.stderr).toMatchObject({ totalBytes: 5, droppedBytes: 0 });
  });

  it("clamps a request's cap to the configured maximum", async () => {
    const r = await run({
      cmd: ["head", "-c", "100000", "/dev/zero"],
      maxOutputBytesPerStream: 10_000_000,
    });
    expect(r.stdout.bytes.length).toBe(64 * 1024);
    expect(r.stdout.droppedBytes).toBe(100_000 - 64 * 1024);
  });

  it("passes only the declared environment", async () => {
    process.env.WORKCELL_TEST_HOST_SECRET = "must-not-leak";
    try {
      const r = await run({ cmd: ["env"], env: { GREETING: "hi there", EMPTY: "" } });
      const names = text(r)
        .out.trim()
        .split("\n")
        .map((line) => line.split("=")[0])
        .sort();
      expect(names).toEqual(["EMPTY", "GREETING", "HOME", "HOSTNAME", "PATH"]);
      expect(text(r).out).toContain("GREETING=hi there\n");
      expect(text(r).out).not.toContain("must-not-leak");
    } finally {
      delete process.env.WORKCELL_TEST_HOST_SECRET;
    }
  });

  it("refuses an environment name that is not a plain identifier", async () => {
    await expect(run({ cmd: ["true"], env: { "A=B": "x" } })).rejects.toThrow(/not allowed/);
  });

  it("runs in the Workdir unless told otherwise", async () => {
    expect(text(await run({ cmd: ["pwd"] })).out).toBe("/home/gem/user-data/work\n");
    expect(text(await run({ cmd: ["pwd"], cwd: "/tmp" })).out).toBe("/tmp\n");
  });

  it("kills a timed-out exec and everything it started", async () => {
    // Without the kill this exec would run for 1004 s, far past the test's timeout.
    const r = await run({
      cmd: [
        "sh",
        "-c",
        "sleep 1001 & (sleep 1002 &) ; sh -c 'sleep 1003' & echo started; sleep 1004",
      ],
      timeoutMs: 500,
    });
    expect(r.status).toBe("timed_out");
    expect(r.exitCode).toBeNull();
    expect(text(r).out).toBe("started\n");
    expect(await strayProcesses()).toEqual([]);
  });

  it("kills a process that left its session but is still a descendant", async () => {
    const r = await run({ cmd: ["sh", "-c", "setsid sleep 1005 & sleep 1006"], timeoutMs: 500 });
    expect(r.status).toBe("timed_out");
    expect(await strayProcesses()).toEqual([]);
  });

  /** The container's processes as the host sees them (its pid namespace), by command line. */
  async function containerCommands(): Promise<string[]> {
    const initPid = (await docker.getContainer(sandbox.instanceId).inspect()).State.Pid;
    const ns = await readlink(`/proc/${initPid}/ns/pid`);
    const found: string[] = [];
    for (const name of await readdir("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      if ((await readlink(`/proc/${name}/ns/pid`).catch(() => "")) !== ns) continue;
      const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => "");
      if (/\) [ZX] /.test(stat)) continue;
      const cmdline = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
      if (cmdline !== "") found.push(cmdline.split("\0").join(" ").trim());
    }
    return found.sort();
  }

  /** A writer on the fifo if a process has it open for reading, else undefined (ENXIO). */
  async function writerIfRead(fifo: string) {
    return open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code === "ENXIO") return undefined;
        throw error;
      },
    );
  }

  // Issue 37 item 3: a background process outlived its command and wrote later, into
  // another run's change batch or none. Each reader below would write what arrives on its
  // fifo into the Workdir; after its command returns none may be left, while a process
  // of an exec still running (another run sharing the sandbox) is left alone.
  it("ends what a command left running (a background job, a setsid daemon) when it exits, and leaves another running exec alone", async () => {
    await run({ cmd: ["mkfifo", "bg.fifo", "daemon.fifo", "other.fifo"] });
    const other = run({ cmd: ["cat", "other.fifo"] });
    let otherWriter: Awaited<ReturnType<typeof writerIfRead>>;
    await pollUntil(async () => {
      otherWriter = await writerIfRead(join(workdir, "other.fifo"));
      return otherWriter !== undefined;
    });

    const r = await run({
      cmd: [
        "sh",
        "-c",
        "(cat bg.fifo > bg.out) </dev/null >/dev/null 2>&1 & " +
          "setsid sh -c 'cat daemon.fifo > daemon.out' </dev/null >/dev/null 2>&1 & echo started",
      ],
    });
    expect(r).toMatchObject({ status: "exited", exitCode: 0 });
    expect(text(r).out).toBe("started\n");
    // Nobody reads either fifo any more: nothing sent there could reach the Workdir.
    expect(await writerIfRead(join(workdir, "bg.fifo"))).toBeUndefined();
    expect(await writerIfRead(join(workdir, "daemon.fifo"))).toBeUndefined();
    expect(await containerCommands()).toEqual([
      "/sbin/docker-init -- sleep 2147483647",
      "cat other.fifo",
      "sleep 2147483647",
    ]);

    // The other exec was untouched: it reads what is written now, and ends by itself.
    await otherWriter?.write("still here\n");
    await otherWriter?.close();
    const o = await other;
    expect(o).toMatchObject({ status: "exited", exitCode: 0 });
    expect(text(o).out).toBe("still here\n");
    expect(await strayProcesses()).toEqual([]);
  });

  it("kills the process on abort and reports cancelled", async () => {
    const controller = new AbortController();
    const seen: string[] = [];
    const pending = run(
      {
        cmd: ["sh", "-c", "echo ready; exec sleep 1007"],
        onStdout: (c) => {
          seen.push(c.toString());
          controller.abort();
        },
      },
      controller.signal,
    );
    const r = await pending;
    expect(r.status).toBe("cancelled");
    expect(r.exitCode).toBeNull();
    expect(seen.join("")).toBe("ready\n");
    expect(await strayProcesses()).toEqual([]);
  });

  it("does not start anything for an already aborted signal", async () => {
    const r = await run({ cmd: ["sh", "-c", "touch /tmp/should-not-exist"] }, AbortSignal.abort());
    expect(r.status).toBe("cancelled");
    expect(text(await run({ cmd: ["ls", "/tmp"] })).out).toBe("");
  });

  it("answers sandbox_gone once the container is removed", async () => {
    const container = await createTestSandbox(
      driver,
      { uid: "exec-user", workdirPath: "work", nodeId, generation: 2 },
      signal(),
    );
    await driver.destroy(container, signal());
    expect(await driver.exec(container, { cmd: ["true"] }, signal())).toEqual({
      ok: false,
      reason: "sandbox_gone",
    });
  });
});
