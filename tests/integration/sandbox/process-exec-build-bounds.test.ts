import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExecOutcome, InstanceRef } from "../../../agent-host/sandbox/driver.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import {
  type ProcessTierFixture,
  processTierFixture,
  wroteAnywhere,
} from "../../support/process-tier.ts";
import {
  createTestSandbox,
  materializeWorkdir,
  silentLogger,
  testConfig,
} from "./sandbox-fixture.ts";

// An exec that finds no pre-built sandbox (decision 0088: the next one is built only once
// the exec before it returned, so a second exec beside a running one builds its own)
// builds it on its path. That build is the exec's: cancelled with it and bounded by its
// timeout, ending `cancelled` / `timed_out` with nothing run and nothing of the build left
// in the generation's cgroup.

const signal = () => AbortSignal.timeout(60_000);
const config = testConfig("unused");

describe("process tier: an exec's own sandbox build", () => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;
  let ref: InstanceRef;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    fixture = await processTierFixture({ dataRoot: dataRoot.path, config, logger: silentLogger });
    await materializeWorkdir(dataRoot.path, "bea", "work/b");
    ref = await createTestSandbox(
      fixture.driver,
      { uid: "bea", workdirPath: "work/b", nodeId: "build-bounds-node" },
      signal(),
    );
  });
  afterAll(async () => {
    await fixture?.cleanup();
    await dataRoot?.remove();
  });

  /** Writes `name` into the Workdir (its cwd) and the generation's /tmp. */
  const touch = (name: string) => ["sh", "-c", `echo ran > ${name}; echo ran > /tmp/${name}`];
  /** Whether `name` exists anywhere the command could have written it. */
  const ran = (name: string) =>
    wroteAnywhere(
      { dataRoot: dataRoot.path, stateDir: fixture.stateDir, instanceId: ref.instanceId },
      name,
    );

  /**
   * Runs `during` while another exec of the generation holds its pre-built sandbox (a
   * long `sleep`, started and seen running first), then ends that exec.
   */
  async function besideARunningExec(during: () => Promise<void>): Promise<void> {
    await fixture.driver.standbyReady(ref.instanceId);
    const holder = new AbortController();
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const held: Promise<ExecOutcome> = fixture.driver.exec(
      ref,
      { cmd: ["sh", "-c", "echo up; exec sleep 120"], onStdout: () => started() },
      AbortSignal.any([holder.signal, signal()]),
    );
    await Promise.race([running, held]);
    try {
      // The pre-built sandbox is taken; the next is built only after `held` returns.
      expect(await fixture.driver.standbyPids(ref.instanceId)).toEqual([]);
      await during();
    } finally {
      holder.abort();
      const end = await held;
      expect(end.ok && end.result.status).toBe("cancelled");
    }
  }

  /** After everything returned: the generation's cgroup holds its new standby only. */
  async function onlyTheStandbyLeft(): Promise<void> {
    await fixture.driver.standbyReady(ref.instanceId);
    const standby = await fixture.driver.standbyPids(ref.instanceId);
    expect(standby).toHaveLength(2);
    const inGroup = await fixture.parts.cgroups.pids(ref.instanceId);
    expect([...inGroup].sort()).toEqual([...standby].sort());
  }

  it("a cancelled exec ends `cancelled` during its own build, with nothing run and nothing left", async () => {
    await besideARunningExec(async () => {
      // Cancelled once the exec is under way (a signal aborted before the call is refused
      // before anything starts: AbortError), so while its sandbox is being built.
      const cancelled = new AbortController();
      const exec = fixture.driver.exec(ref, { cmd: touch("cancelled") }, cancelled.signal);
      cancelled.abort();
      const out = await exec;
      expect(out.ok && out.result.status).toBe("cancelled");
      expect(out.ok && out.result.exitCode).toBe(null);
    });
    expect(await ran("cancelled")).toBe(false);
    await onlyTheStandbyLeft();
  });

  it("an exec whose timeout ends inside its own build is `timed_out`, with nothing run and nothing left", async () => {
    await besideARunningExec(async () => {
      // 1 ms: far less than any build (a spawn, a cgroup join, bwrap's namespaces and
      // mounts) takes, so the timeout fires while the sandbox is still being built.
      const out = await fixture.driver.exec(ref, { cmd: touch("late"), timeoutMs: 1 }, signal());
      expect(out.ok && out.result.status).toBe("timed_out");
      expect(out.ok && out.result.exitCode).toBe(null);
    });
    expect(await ran("late")).toBe(false);
    await onlyTheStandbyLeft();
  });

  it("the generation still runs execs afterwards", async () => {
    const out = await fixture.driver.exec(ref, { cmd: touch("after") }, signal());
    expect(out.ok && out.result.exitCode).toBe(0);
    expect(await ran("after")).toBe(true);
  });
});
