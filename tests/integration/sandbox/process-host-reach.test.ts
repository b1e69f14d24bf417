import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InstanceRef } from "../../../agent-host/sandbox/driver.ts";
import { STATE_ALIAS_ROOT } from "../../../agent-host/sandbox/process/state-dir-alias.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import { materializeWorkdir, silentLogger, testConfig } from "./sandbox-fixture.ts";

// Issue 37 item 6, from the host's side: other accounts on the node (`nobody`, host uid
// 1000, which is also the sandbox user's number) must not reach a live process sandbox's
// directories under the state directory: its /tmp (a 1777 tmpfs), its home, or the
// UserWorkspace bound there. Each attempt runs as that account (setpriv) and prints its
// exit status; afterwards the sandbox shows that nothing arrived and still works.

const run = promisify(execFile);
const signal = () => AbortSignal.timeout(60_000);

/** Each probe's `name=<exit status>` as one account, with the paths as positional args. */
const PROBES = [
  'ls "$1" >/dev/null 2>&1; echo list-generation=$?',
  'touch "$1/tmp/planted" 2>/dev/null; echo write-tmp=$?',
  'ls "$1/home" >/dev/null 2>&1; echo list-home=$?',
  'ls "$1/mnt/user-data" >/dev/null 2>&1; echo list-workspace=$?',
  'cat "$1/mnt/user-data/work/private/secret.txt" 2>/dev/null; echo read-secret=$?',
  'ls "$2/root/tmp" >/dev/null 2>&1; echo list-proc-root=$?',
].join("; ");

async function asHostAccount(uid: number, generationDir: string, sandboxPid: number) {
  const { stdout } = await run(
    "setpriv",
    [
      `--reuid=${uid}`,
      `--regid=${uid}`,
      "--clear-groups",
      "--",
      "sh",
      "-c",
      PROBES,
      "probe",
      generationDir,
      `/proc/${sandboxPid}`,
    ],
    { timeout: 30_000, env: { PATH: "/usr/bin:/bin" } },
  );
  return stdout;
}

// Both layouts (decision 0144): the state directory below parents others may search, and
// below a 0700 parent (a private state root), where bwrap reaches it through an alias.
describe.each([
  ["a state directory others may pass through", false],
  ["a state directory below a 0700 parent", true],
])("process tier: host accounts and live sandboxes (%s)", (_layout, closedParent) => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;
  let ref: InstanceRef;
  let parent: string | undefined;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    if (closedParent) {
      parent = await mkdtemp(join(tmpdir(), "workcell-test-private-root-"));
      await chmod(parent, 0o700);
    }
    fixture = await processTierFixture({
      dataRoot: dataRoot.path,
      config: testConfig("unused"),
      logger: silentLogger,
      ...(parent === undefined ? {} : { stateDir: join(parent, "state") }),
    });
    // Below the closed parent the generations live behind the alias, not the real path.
    expect(fixture.parts.stateDir.startsWith(`${STATE_ALIAS_ROOT}/`)).toBe(closedParent);
    const workspace = await materializeWorkdir(dataRoot.path, "victim", "work/private");
    await writeFile(join(workspace, "work/private/secret.txt"), "victim-secret");
    const created = await fixture.driver.create(
      {
        sandboxId: "reach0000001",
        generation: 1,
        uid: "victim",
        runtimeScopeId: randomUUID(),
        workdirPath: "work/private",
        nodeId: "reach-node",
      },
      signal(),
    );
    if (!created.ok) throw new Error(JSON.stringify(created));
    ref = created.instance;
  });
  afterAll(async () => {
    await fixture?.cleanup();
    await dataRoot?.remove();
    if (parent !== undefined) await rm(parent, { recursive: true, force: true });
  });

  async function sh(script: string) {
    const out = await fixture.driver.exec(ref, { cmd: ["sh", "-c", script] }, signal());
    if (!out.ok) throw new Error("sandbox gone");
    return { code: out.result.exitCode, out: out.result.stdout.bytes.toString() };
  }

  it.each([
    ["nobody", 65534],
    ["host uid 1000", 1000],
  ])(
    "%s can neither list, write nor read a live sandbox's directories; the sandbox sees nothing arrive",
    async (_name, uid) => {
      // A command has run (the sandbox is live) and its /tmp holds a file of its own.
      expect((await sh("echo mine > /tmp/own.txt && cat /tmp/own.txt")).out).toBe("mine\n");
      const [sandboxPid] = (await fixture.driver.standbyPids(ref.instanceId)).slice(-1);
      if (sandboxPid === undefined) throw new Error("no standby sandbox to probe");
      const generationDir = join(fixture.parts.stateDir, ref.instanceId);

      const out = await asHostAccount(uid, generationDir, sandboxPid);
      for (const probe of [
        "list-generation",
        "write-tmp",
        "list-home",
        "list-workspace",
        "read-secret",
        "list-proc-root",
      ]) {
        expect(out).toMatch(new RegExp(`^${probe}=[1-9]`, "m"));
      }
      // Root (agent-host) still reaches it: the refusals are the accounts', not a broken path.
      expect((await run("ls", [join(generationDir, "tmp")])).stdout).toContain("own.txt");

      const after = await sh("ls -a /tmp; cat /home/gem/user-data/work/private/secret.txt");
      expect(after.code).toBe(0);
      expect(after.out).toBe(".\n..\nown.txt\nvictim-secret");
    },
  );
});
