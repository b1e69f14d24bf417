import { randomBytes } from "node:crypto";
import { access, stat } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  findContainerFreezer,
  groupPids,
  isFrozen,
} from "../../../agent-host/sandbox/container/container-freezer.ts";
import type { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type { ExecOutcome, SandboxInstance } from "../../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { pollUntil } from "../../support/poll-until.ts";
import {
  createTestSandbox,
  dockerForTest,
  materializeWorkdir,
  proxiedDockerDriver,
} from "./sandbox-fixture.ts";

// Decision 0179 (issue 37 item 2): the container tier stops a command on the host, the
// container's cgroup frozen and the command's processes killed in it, before Docker is
// asked anything, so a quota stop's overrun does not grow with dockerd's latency; and the
// stop never touches another container's group.

const CALL_TIMEOUT_MS = 1_500;
const signal = () => AbortSignal.timeout(60_000);
/** The kill's container inspect, the first Docker call a stop makes after the host's kill. */
const CONTAINER_INSPECT = /^GET [^ ]*\/containers\/[0-9a-f]{64}\/json/;
/** An exec inspect: the stop's, for its command's host pid, and the kill's after it. */
const EXEC_INSPECT = /^GET [^ ]*\/exec\/[0-9a-f]{64}\/json/;
/**
 * Answers the first exec inspect as Docker 20.10 does while containerd has not answered an
 * exec's start: running, with pid 0 (the digits blanked, the length kept). `blanked()`
 * counts the answers rewritten.
 */
function blankFirstExecPid() {
  let blanked = 0;
  const blankPid = (reply: Buffer) => {
    blanked++;
    return Buffer.from(
      reply
        .toString("latin1")
        .replace(/"Pid":(\d+)/, (_m, pid: string) => `"Pid":0${" ".repeat(pid.length - 1)}`),
      "latin1",
    );
  };
  return {
    rewriteReplyTo: (chunk: Buffer) =>
      blanked === 0 && EXEC_INSPECT.test(chunk.toString("latin1")) ? blankPid : undefined,
    blanked: () => blanked,
  };
}
/** A writer that appends to `file` (in the Workdir) for as long as it lives. */
const writer = (file: string) => [
  "sh",
  "-c",
  `while :; do echo tick-tick-tick-tick >> ${file}; done`,
];

describe("a container-tier stop on the host", () => {
  let docker: Docker;
  let dataRoot: DataRoot;
  let nodeId: string;
  let healthy: DockerDriver;
  let a: SandboxInstance;
  let b: SandboxInstance;
  let workdirA: string;
  let workdirB: string;
  let proxy: PausableProxy | undefined;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    ({ docker, nodeId, driver: healthy } = dockerForTest(dataRoot.path));
    workdirA = join(await materializeWorkdir(dataRoot.path, "freeze-a", "work"), "work");
    workdirB = join(await materializeWorkdir(dataRoot.path, "freeze-b", "work"), "work");
    a = await createTestSandbox(
      healthy,
      { uid: "freeze-a", workdirPath: "work", nodeId },
      signal(),
    );
    b = await createTestSandbox(
      healthy,
      { uid: "freeze-b", workdirPath: "work", nodeId },
      signal(),
    );
  });

  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  afterAll(async () => {
    await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
    await dataRoot.remove();
  });

  const initPidOf = async (c: SandboxInstance) =>
    (await docker.getContainer(c.instanceId).inspect()).State.Pid;

  /** A driver whose Docker socket is a proxy that stops answering before `pauseBefore`. */
  async function proxied(
    pauseBefore: (chunk: Buffer) => boolean,
    rewriteReplyTo?: (chunk: Buffer) => ((reply: Buffer) => Buffer) | undefined,
  ): Promise<DockerDriver> {
    let driver: DockerDriver;
    ({ driver, proxy } = await proxiedDockerDriver(
      dataRoot.path,
      { pauseBefore, ...(rewriteReplyTo ? { rewriteReplyTo } : {}) },
      CALL_TIMEOUT_MS,
    ));
    return driver;
  }

  const exists = (path: string) =>
    access(path).then(
      () => true,
      () => false,
    );

  /** Whether the file at `path` holds a byte yet. */
  const grew = (path: string) => async () =>
    ((await stat(path).catch(() => undefined))?.size ?? 0) > 0;

  /**
   * A writer on A through `driver` into `file`, once it has written: its stop, its run,
   * the file's path, A's group and the processes A's group held then.
   */
  async function writingOnA(driver: DockerDriver, file: string) {
    const stop = new AbortController();
    const run = driver.exec(a, { cmd: writer(file) }, stop.signal);
    const path = join(workdirA, file);
    await pollUntil(grew(path), { timeoutMs: 30_000 });
    const freezer = findContainerFreezer(a.instanceId);
    if (freezer === undefined) throw new Error("no cgroup for A");
    return { stop, run, path, freezer, kept: new Set(groupPids(freezer)) };
  }

  /** A's sandbox still runs a command, and what was written at `path` stayed `size`. */
  async function expectAWorksAndStill(path: string, size: number) {
    const after = await healthy.exec(a, { cmd: ["sh", "-c", "echo alive"] }, signal());
    expect(after.ok && after.result.stdout.bytes.toString()).toBe("alive\n");
    expect((await stat(path)).size).toBe(size);
  }

  it("finds each container's own group and never another's, whatever init pid it is given", async () => {
    const [pidA, pidB] = await Promise.all([initPidOf(a), initPidOf(b)]);
    const own = findContainerFreezer(a.instanceId, pidA);
    expect(own?.dir).toContain(a.instanceId);
    expect(groupPids(own as NonNullable<typeof own>)).toContain(pidA);
    // A stale init pid (here: B's) names B's group, which is refused: A's is found by id.
    const stale = findContainerFreezer(a.instanceId, pidB);
    expect(stale?.dir).toBe(own?.dir);
    expect(stale?.dir).not.toContain(b.instanceId);
    // An id of no container finds nothing, even given a live container's init.
    expect(findContainerFreezer(randomBytes(32).toString("hex"), pidB)).toBeUndefined();
    expect(findContainerFreezer(a.instanceId.slice(0, 12), pidA)).toBeUndefined();
    expect(findContainerFreezer("../..", pidA)).toBeUndefined();
  });

  it("kills the command although Docker stops answering, and leaves another container's command running", async () => {
    const freezerB = findContainerFreezer(b.instanceId);
    if (freezerB === undefined) throw new Error("no cgroup for B");
    const pidsOfB = groupPids(freezerB);
    // B's command runs through the whole stop: it waits for a gate the test opens after.
    const bRun = healthy.exec(
      b,
      {
        cmd: [
          "sh",
          "-c",
          "touch started; while [ ! -e gate ]; do echo b >> ticks; sleep 0.02; done; echo done",
        ],
      },
      signal(),
    );
    await pollUntil(() => exists(join(workdirB, "started")), { timeoutMs: 30_000 });

    const driver = await proxied((chunk) => CONTAINER_INSPECT.test(chunk.toString("latin1")));
    const w = await writingOnA(driver, "ticks");
    const { freezer: freezerA, kept: keptA } = w;
    w.stop.abort();
    const outcome: ExecOutcome = await w.run;
    expect(outcome.ok && outcome.result.status).toBe("cancelled");
    // Docker holds the kill's first call (the proxy pauses before it, for good): the
    // writer is gone all the same, killed on the host; A's keep-alive and init are not.
    await pollUntil(() => proxy?.stopped === true, { timeoutMs: 30_000 });
    await pollUntil(() => groupPids(freezerA).length === 2, { timeoutMs: 30_000 });
    expect(groupPids(freezerA).every((pid) => keptA.has(pid))).toBe(true);
    expect(await isFrozen(freezerA)).toBe(false);
    const sizeAfterStop = (await stat(w.path)).size;

    // B: never frozen, none of its processes killed, and its command ends by itself.
    expect(await isFrozen(freezerB)).toBe(false);
    expect(groupPids(freezerB)).toEqual(expect.arrayContaining(pidsOfB));
    await healthy.exec(b, { cmd: ["touch", "gate"] }, signal());
    const bOutcome = await bRun;
    expect(bOutcome.ok && bOutcome.result).toMatchObject({ status: "exited", exitCode: 0 });
    expect(bOutcome.ok && bOutcome.result.stdout.bytes.toString()).toBe("done\n");

    // A's sandbox works on (not half-killed), and the writer wrote nothing more.
    proxy?.resume();
    await expectAWorksAndStill(w.path, sizeAfterStop);
  });

  it("kills the command on the host when Docker names its process only after the stop began", async () => {
    // Docker 20.10 answers an exec inspect with Running and no pid until containerd has
    // answered the start, which under load comes after the command already writes: the
    // stop's first inspect is answered so (its pid blanked, the length kept), and Docker
    // hangs from the kill's container inspect on. Only the host can stop the writer.
    const blank = blankFirstExecPid();
    const driver = await proxied(
      (chunk) => CONTAINER_INSPECT.test(chunk.toString("latin1")),
      blank.rewriteReplyTo,
    );
    const w = await writingOnA(driver, "late");
    w.stop.abort();
    const outcome = await w.run;
    expect(outcome.ok && outcome.result.status).toBe("cancelled");
    await pollUntil(() => groupPids(w.freezer).length === 2, { timeoutMs: 30_000 });
    expect(blank.blanked()).toBe(1);
    expect(groupPids(w.freezer).every((pid) => w.kept.has(pid))).toBe(true);
    expect(await isFrozen(w.freezer)).toBe(false);
    const size = (await stat(w.path)).size;
    proxy?.resume();
    await expectAWorksAndStill(w.path, size);
  });

  it("kills the command while frozen, found by its argv, when Docker has not named it and then stops answering", async () => {
    // Decision 0189: the stop's inspect answers Running with no pid, and every later exec
    // inspect hangs. Thawing to ask Docker again let the writer write on (and, Docker
    // hung, survive the stop); the frozen group shows the command by its argv instead.
    let inspects = 0;
    const blank = blankFirstExecPid();
    const driver = await proxied(
      (chunk) => EXEC_INSPECT.test(chunk.toString("latin1")) && ++inspects > 1,
      blank.rewriteReplyTo,
    );
    const w = await writingOnA(driver, "unnamed");
    w.stop.abort();
    const outcome = await w.run;
    expect(outcome.ok && outcome.result.status).toBe("cancelled");
    await pollUntil(() => groupPids(w.freezer).length === 2, { timeoutMs: 30_000 });
    expect(blank.blanked()).toBe(1);
    expect(proxy?.stopped).toBe(true);
    expect(groupPids(w.freezer).every((pid) => w.kept.has(pid))).toBe(true);
    expect(await isFrozen(w.freezer)).toBe(false);
    const size = (await stat(w.path)).size;
    proxy?.resume();
    await expectAWorksAndStill(w.path, size);
  });

  it("two commands of one container stopped at once are both killed, and the container is thawed after the last", async () => {
    const stop = new AbortController();
    const writers = ["w1", "w2"].map((name) => healthy.exec(a, { cmd: writer(name) }, stop.signal));
    await pollUntil(grew(join(workdirA, "w1")), { timeoutMs: 30_000 });
    await pollUntil(grew(join(workdirA, "w2")), { timeoutMs: 30_000 });
    stop.abort();
    for (const outcome of await Promise.all(writers)) {
      expect(outcome.ok && outcome.result.status).toBe("cancelled");
    }
    const freezerA = findContainerFreezer(a.instanceId);
    if (freezerA === undefined) throw new Error("no cgroup for A");
    await pollUntil(() => groupPids(freezerA).length === 2, { timeoutMs: 30_000 });
    expect(await isFrozen(freezerA)).toBe(false);
    const sizes = await Promise.all(["w1", "w2"].map((n) => stat(join(workdirA, n))));
    const after = await healthy.exec(a, { cmd: ["sh", "-c", "echo alive"] }, signal());
    expect(after.ok && after.result.stdout.bytes.toString()).toBe("alive\n");
    const again = await Promise.all(["w1", "w2"].map((n) => stat(join(workdirA, n))));
    expect(again.map((s) => s.size)).toEqual(sizes.map((s) => s.size));
  });

  it("kills every command of the container, not the sandbox, when Docker never said which process is the command", async () => {
    // Docker hangs from the exec's pid lookup on: nothing tells the stop the command's pid.
    const driver = await proxied((chunk) => EXEC_INSPECT.test(chunk.toString("latin1")));
    const w = await writingOnA(driver, "blind");
    w.stop.abort();
    const outcome = await w.run;
    expect(outcome.ok && outcome.result.status).toBe("cancelled");
    await pollUntil(() => groupPids(w.freezer).length === 2, { timeoutMs: 30_000 });
    expect(proxy?.stopped).toBe(true);
    expect(groupPids(w.freezer).every((pid) => w.kept.has(pid))).toBe(true);
    await pollUntil(async () => !(await isFrozen(w.freezer)), { timeoutMs: 30_000 });
    const size = (await stat(w.path)).size;
    await expectAWorksAndStill(w.path, size);
  });
});
