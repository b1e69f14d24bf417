import { readFile, rename, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InstanceRef } from "../../../agent-host/sandbox/driver.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { processAlive, processesOfUid } from "../../support/host-processes.ts";
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

// A generation's sandbox is built and verified before its exec (decision 0088), so it
// waits longer than an exec's own build did. The attacker's side of that wait, in the
// `workdir` file view (the Workdir bound read-write below the read-only UserWorkspace):
// the Workdir is renamed on the host and a symlink put in its place, while a verified
// sandbox waits. The exec must be refused with nothing run (the sandbox's mount of the
// Workdir no longer where it was verified, and the one built again lands where the
// symlink points), never run the command anywhere else; and with the real Workdir back,
// execs run again.

const signal = () => AbortSignal.timeout(60_000);
const WORKDIR = "work/pm";
const config = testConfig("unused");

describe("process tier: a pre-built sandbox's mounts, changed while it waits", () => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;
  let ref: InstanceRef;
  let workspace: string;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    fixture = await processTierFixture({ dataRoot: dataRoot.path, config, logger: silentLogger });
    workspace = await materializeWorkdir(dataRoot.path, "pam", WORKDIR);
    ref = await createTestSandbox(
      fixture.driver,
      { uid: "pam", workdirPath: WORKDIR, nodeId: "prebuilt-node", fileView: "workdir" },
      signal(),
    );
  });
  afterAll(async () => {
    await fixture?.cleanup();
    await dataRoot?.remove();
  });

  const touch = (name: string) => ({
    cmd: ["sh", "-c", `echo ran > ${name}; echo ran > /tmp/${name}`],
  });
  /** Whether `name` exists anywhere the command could have written it. */
  const ran = (name: string) =>
    wroteAnywhere(
      { dataRoot: dataRoot.path, stateDir: fixture.stateDir, instanceId: ref.instanceId },
      name,
    );

  it("refuses the exec and runs nothing when the Workdir was swapped for a symlink while the sandbox waited", async () => {
    // touch() writes relative to the cwd (the Workdir) and to /tmp.
    const control = await fixture.driver.exec(ref, touch("control"), signal());
    expect(control.ok && control.result.exitCode).toBe(0);
    expect(await ran("control")).toBe(true);
    // The next sandbox is built and verified (the real Workdir in place), then waits.
    await fixture.driver.standbyReady(ref.instanceId);
    const [, waiting] = await fixture.driver.standbyPids(ref.instanceId);
    expect(waiting).toBeDefined();
    const real = join(workspace, WORKDIR);
    const moved = `${real}-moved`;
    await rename(real, moved);
    await symlink(".", real);
    try {
      // Refused by the host's verification or by bwrap itself (it cannot resolve the
      // swapped mount point): either way before any command could start.
      const refused = await fixture.driver.exec(ref, touch("swapped"), signal()).then(
        () => undefined,
        (error: unknown) => error,
      );
      // The error says nothing ran (issue 38), not "the command may have completed".
      expect(refused).toMatchObject({
        code: "unavailable",
        details: { reason: "sandbox_start_failed", command_ran: "no" },
      });
      expect(String((refused as Error).message)).toMatch(/nothing of the command ran/);
      expect(await ran("swapped")).toBe(false);
      // The verified sandbox that waited was dropped, not released.
      expect(await processAlive(waiting ?? 0)).toBe(false);
      // Nothing of the refused sandboxes is left (the next standby is refused too while
      // the symlink is there: the generation runs nothing at all).
      await fixture.driver.standbyReady(ref.instanceId);
      expect(await processesOfUid(await ownerUid())).toEqual([]);
      expect(await fixture.parts.cgroups.pids(ref.instanceId)).toEqual([]);
    } finally {
      await rm(real);
      await rename(moved, real);
    }
    const again = await fixture.driver.exec(ref, touch("restored"), signal());
    expect(again.ok && again.result.exitCode).toBe(0);
    expect(await ran("restored")).toBe(true);
  });

  async function ownerUid(): Promise<number> {
    return Number(await readFile(join(fixture.stateDir, ref.instanceId, "userns-owner"), "utf8"));
  }
});
