import { randomUUID } from "node:crypto";
import { chown, copyFile, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InstanceRef } from "../../../agent-host/sandbox/driver.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { inotifyHoldBinary } from "../../support/inotify-hold.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import { GEM, materializeWorkdir, silentLogger, testConfig } from "./sandbox-fixture.ts";

// docs/architecture.md §9, "tenants share no kernel budget" (#13 item 5): the kernel counts
// inotify instances per uid of each user namespace's owner. Tenant A's sandbox opens
// inotify instances until the kernel refuses; tenant B's sandbox, at the same moment,
// still gets its own. Before each generation had its own namespace owner, every sandbox
// was charged to host uid 1000 and B got none ("Too many open files").

const signal = () => AbortSignal.timeout(60_000);
const NODE = "budget-node";
const WORKDIR = "work/budget";
const HOLDING = "holding.txt";

describe("process tier: per-sandbox kernel budget", () => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;
  const refs: Record<"a" | "b", InstanceRef> = {} as Record<"a" | "b", InstanceRef>;
  const workspaces: Record<"a" | "b", string> = { a: "", b: "" };

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    fixture = await processTierFixture({
      dataRoot: dataRoot.path,
      config: testConfig("unused"),
      logger: silentLogger,
    });
    const helper = await inotifyHoldBinary();
    for (const [key, uid] of [
      ["a", "tenant-a"],
      ["b", "tenant-b"],
    ] as const) {
      workspaces[key] = await materializeWorkdir(dataRoot.path, uid, WORKDIR);
      const target = join(workspaces[key], WORKDIR, "inotify-hold");
      await copyFile(helper, target);
      await chown(target, GEM, GEM);
      const created = await fixture.driver.create(
        {
          sandboxId: `budget0000${key}1`,
          generation: 1,
          uid,
          runtimeScopeId: randomUUID(),
          workdirPath: WORKDIR,
          nodeId: NODE,
        },
        signal(),
      );
      if (!created.ok) throw new Error(JSON.stringify(created));
      refs[key] = created.instance;
    }
  });
  afterAll(async () => {
    await fixture?.cleanup();
    await dataRoot?.remove();
  });

  async function sh(key: "a" | "b", script: string, abort = signal()) {
    const out = await fixture.driver.exec(refs[key], { cmd: ["sh", "-c", script] }, abort);
    if (!out.ok) throw new Error("sandbox gone");
    return { ...out.result, out: out.result.stdout.bytes.toString() };
  }

  it("A exhausting its inotify instances leaves B's inotify_init working", async () => {
    const hostMax = Number(await readFile("/proc/sys/fs/inotify/max_user_instances", "utf8"));
    const holdA = new AbortController();
    const holding = sh("a", `./inotify-hold 1000000 hold > ${HOLDING}`, holdA.signal);
    try {
      const heldByA = join(workspaces.a, WORKDIR, HOLDING);
      await pollUntil(async () => (await readFile(heldByA, "utf8").catch(() => "")).includes("\n"));
      // A got the host's whole per-uid budget, then the kernel refused it.
      expect(await readFile(heldByA, "utf8")).toBe(`opened=${hostMax} error=Too many open files\n`);
      // While A holds them all, B opens its own.
      const b = await sh("b", "./inotify-hold 8");
      expect(b.out).toBe("opened=8 error=none\n");
      // And A, a second process in the same sandbox, still gets none: A is bounded.
      const aAgain = await sh("a", "./inotify-hold 8");
      expect(aAgain.out).toBe("opened=0 error=Too many open files\n");
    } finally {
      holdA.abort();
    }
    const ended = await holding;
    expect(ended.status).toBe("cancelled");
    // Nothing of A's held instances outlives its exec: the budget is whole again.
    const after = await sh("a", "./inotify-hold 8");
    expect(after.out).toBe("opened=8 error=none\n");
  }, 120_000);

  it("runs every sandbox as 1000 inside, in a user namespace of its own, nested ones refused", async () => {
    const script =
      "id -u; cat /proc/self/uid_map; cat /proc/sys/user/max_user_namespaces; readlink /proc/self/ns/user";
    const a = (await sh("a", script)).out.split("\n");
    const b = (await sh("b", script)).out.split("\n");
    expect(a[0]).toBe("1000");
    // Only uid 1000 exists in the namespace, and it is host 1000.
    expect(a[1]?.trim().split(/\s+/)).toEqual(["1000", "1000", "1"]);
    expect(a[2]).toBe("0");
    expect(a[3]).toMatch(/^user:\[\d+\]$/);
    expect(b[3]).toMatch(/^user:\[\d+\]$/);
    expect(a[3]).not.toBe(b[3]);
    // Two execs of one sandbox share its namespace (the budget is per sandbox, not per exec).
    expect((await sh("a", "readlink /proc/self/ns/user")).out.trim()).toBe(a[3]);
    expect(a[3]).not.toBe(await readlink("/proc/self/ns/user"));
  });
});
