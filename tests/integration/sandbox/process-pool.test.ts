import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SandboxInstance } from "../../../agent-host/sandbox/driver.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import {
  createTestSandbox,
  materializeWorkdir,
  silentLogger,
  testConfig,
} from "./sandbox-fixture.ts";

// The process tier's warm pool (issue 41 item 2, decision 0185): blanks (the two tmpfs,
// the user namespace, the directory modes; no uid's files) made ahead and adopted by a new
// generation. The attacker's side: a blank is handed to one generation only, never one
// that was tampered with or made before a drain, and a generation made from a blank is as
// isolated as one made in full (the process-tier attack probes, run again).

const signal = () => AbortSignal.timeout(60_000);
const NODE = "pool-node";
const BLANK = "process-pool-";

describe("process tier: the warm pool of blank generations", () => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;

  beforeEach(async () => {
    dataRoot = await freshDataRoot();
    fixture = await processTierFixture({
      dataRoot: dataRoot.path,
      config: testConfig("unused", { processPoolSize: 3 }),
      logger: silentLogger,
    });
  });
  afterEach(async () => {
    await fixture?.cleanup();
    await dataRoot?.remove();
  });

  const blanks = async () =>
    (await readdir(fixture.stateDir)).filter((name) => name.startsWith(BLANK)).sort();
  /** The host uid owning a blank's or a generation's user namespace. */
  const ownerOf = (name: string) => readFile(join(fixture.stateDir, name, "userns-owner"), "utf8");
  const hostMountsBelow = async (name: string) =>
    (await readFile("/proc/self/mountinfo", "utf8"))
      .split("\n")
      .map((line) => line.split(" ")[4] ?? "")
      .filter((point) => point.startsWith(`${join(fixture.stateDir, name)}/`));
  const sh = async (c: SandboxInstance, script: string) => {
    const out = await fixture.driver.exec(c, { cmd: ["sh", "-c", script] }, signal());
    if (!out.ok) throw new Error(`sandbox gone: ${out.reason}`);
    return out.result.stdout.bytes.toString();
  };
  const create = async (uid: string, workdirPath = "work/p") => {
    await materializeWorkdir(dataRoot.path, uid, workdirPath);
    return createTestSandbox(fixture.driver, { uid, workdirPath, nodeId: NODE }, signal());
  };

  it("hands a blank to a new generation, which is as isolated as one made in full", async () => {
    await fixture.driver.pool.fill(3);
    expect(fixture.driver.pool.held()).toBe(3);
    const before = await blanks();
    const owners = await Promise.all(before.map(ownerOf));
    const victim = await materializeWorkdir(dataRoot.path, "victim", "work/private");
    await writeFile(join(victim, "work/private/secret.txt"), "victim-secret");

    const mine = await create("mallory");
    // One blank was taken (its namespace is the generation's), the others stay.
    expect(fixture.driver.pool.held()).toBe(2);
    const left = await blanks();
    expect(left).toHaveLength(2);
    const taken = before.filter((b) => !left.includes(b));
    expect(taken).toHaveLength(1);
    expect(owners).toContain(await ownerOf(mine.instanceId));
    expect(await hostMountsBelow(taken[0] ?? "")).toEqual([]);
    // The mount table says what the generation has: its binds, its tmpfs, its namespace.
    expect((await hostMountsBelow(mine.instanceId)).sort()).toEqual(
      ["home", "mnt/skills", "mnt/user-data", "tmp", "userns"]
        .map((p) => join(fixture.stateDir, mine.instanceId, p))
        .sort(),
    );

    // The process-tier attack probes: only its own UserWorkspace, nothing of another user.
    expect(await sh(mine, "ls /home/gem/user-data/work")).toBe("p\n");
    expect(
      await sh(mine, "cat /home/gem/user-data/work/private/secret.txt 2>&1; echo rc=$?"),
    ).toMatch(/rc=1/);
    // Not anywhere a bind could put it: the sandbox's whole tree of user files and tmpfs.
    expect(await sh(mine, "find /home /tmp -name secret.txt 2>&1; echo done")).toBe("done\n");
    // /tmp and home are the blank's fresh tmpfs: empty, private, sized as configured.
    expect(await sh(mine, "ls -A /tmp; echo end")).toBe("end\n");
    const tmpLine = await sh(mine, "grep ' /tmp ' /proc/self/mountinfo");
    expect(tmpLine).toContain("tmpfs");
    expect(tmpLine).toMatch(/size=16384k/);
    expect(await sh(mine, "id -u; stat -c %a /home/gem")).toBe("1000\n700\n");
  });

  it("never hands out a blank whose tmpfs holds a file or whose mount is gone", async () => {
    await fixture.driver.pool.fill(2);
    const [planted, unmounted] = await blanks();
    if (!planted || !unmounted) throw new Error("the pool did not fill");
    // A file left in a blank's /tmp (as a recycled sandbox would have), and a blank whose
    // home tmpfs was unmounted behind the pool's back.
    await writeFile(join(fixture.stateDir, planted, "tmp", "left-behind"), "stale");
    await fixture.parts.mounts.unmount(join(fixture.stateDir, unmounted, "home"));
    const owners = await Promise.all([planted, unmounted].map(ownerOf));

    const mine = await create("alice");
    // Both were discarded (removed), and the generation was made in full.
    expect(fixture.driver.pool.held()).toBe(0);
    expect(await blanks()).toEqual([]);
    expect(owners).not.toContain(await ownerOf(mine.instanceId));
    expect(await sh(mine, "ls -A /tmp; echo end")).toBe("end\n");
    expect(await hostMountsBelow(planted)).toEqual([]);
    expect(await hostMountsBelow(unmounted)).toEqual([]);
  });

  it("never hands out a blank made before a drain, and leaves no blank after it", async () => {
    const filling = fixture.driver.pool.fill(3);
    const draining = fixture.driver.pool.drain();
    await Promise.all([filling, draining]);
    expect(fixture.driver.pool.held()).toBe(0);
    expect(await blanks()).toEqual([]);
    const mountinfo = await readFile("/proc/self/mountinfo", "utf8");
    // This driver's blanks only: another stack on the host may hold blanks of its own.
    expect(mountinfo).not.toContain(join(fixture.stateDir, BLANK));
    const mine = await create("bob");
    expect(await blanks()).toEqual([]);
    expect(await sh(mine, "echo ok")).toBe("ok\n");
  });

  it("gives the next user a fresh blank, never one another user's generation used", async () => {
    await fixture.driver.pool.fill(2);
    const first = await create("alice", "work/a");
    await sh(first, "echo alice-tmp > /tmp/mine; echo alice-home > ~/mine");
    const firstOwner = await ownerOf(first.instanceId);
    expect((await fixture.driver.destroy(first, signal())).ok).toBe(true);

    const second = await create("bob", "work/b");
    expect(fixture.driver.pool.held()).toBe(0);
    expect(await ownerOf(second.instanceId)).not.toBe(firstOwner);
    expect(await sh(second, "ls -A /tmp; echo --; ls -A ~")).toBe("--\nskills\nuser-data\n");
    expect(await sh(second, "ls /home/gem/user-data/work")).toBe("b\n");
    // Destroyed generations are removed, never put back in the pool.
    expect(await blanks()).toEqual([]);
  });

  it("gives concurrent creates distinct blanks", async () => {
    await fixture.driver.pool.fill(3);
    const owners = await Promise.all((await blanks()).map(ownerOf));
    const made = await Promise.all(["u1", "u2", "u3"].map((uid) => create(uid, `work/${uid}`)));
    const got = await Promise.all(made.map((c) => ownerOf(c.instanceId)));
    expect(new Set(got).size).toBe(3);
    expect([...got].sort()).toEqual([...owners].sort());
    expect(fixture.driver.pool.held()).toBe(0);
    for (const [i, c] of made.entries()) {
      expect(await sh(c, "ls /home/gem/user-data/work")).toBe(`u${i + 1}\n`);
    }
  });
});
