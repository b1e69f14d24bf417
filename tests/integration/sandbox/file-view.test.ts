import { randomUUID } from "node:crypto";
import { chown, lstat, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AcquireRequest } from "../../../agent-host/sandbox/lifecycle/acquire-sandbox.ts";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import type { SandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type ManagerWorld, managerWorld, TIERS } from "./manager-fixture.ts";
import { GEM, materializeWorkdir } from "./sandbox-fixture.ts";

// The attacker's side of `file_view: workdir` (docs/architecture.md §5), in both tiers: from
// inside the sandbox nothing outside the Workdir is writable (every way of writing is
// refused AND the host shows nothing changed), the rest of the user's workspace is
// readable, another tenant is not there at all, and the Workdir itself works as usual.

const signal = () => AbortSignal.timeout(60_000);
const MOUNT = "/home/gem/user-data";

/** Every entry below `root` with its type, mode, size, mtime and (files) content. */
async function snapshot(root: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  async function walk(dir: string, rel: string): Promise<void> {
    for (const name of (await readdir(dir)).sort()) {
      const path = join(dir, name);
      const key = rel === "" ? name : `${rel}/${name}`;
      const st = await lstat(path);
      const body = st.isFile() ? await readFile(path, "utf8") : "";
      out.set(key, `${st.mode}:${st.size}:${st.mtimeMs}:${st.ino}:${body}`);
      if (st.isDirectory()) await walk(path, key);
    }
  }
  await walk(root, "");
  return out;
}

describe.each(TIERS)("file view workdir (%s tier)", (tier) => {
  let world: ManagerWorld;
  let manager: SandboxManager;
  let handle: SandboxHandle;
  let request: AcquireRequest;
  let workspace: string;
  let victim: string;
  const uid = "alice";
  const workdirPath = `projects/${randomUUID()}`;
  const sibling = "projects/sibling";

  beforeAll(async () => {
    world = await managerWorld({ keepWarmMs: 60_000 }, tier);
    manager = world.manager();
    workspace = await materializeWorkdir(world.dataRoot.path, uid, workdirPath);
    await materializeWorkdir(world.dataRoot.path, uid, sibling);
    for (const [path, body] of [
      [`${sibling}/keep.txt`, "sibling-data"],
      ["notes.txt", "top-level notes"],
      [`${workdirPath}/inside.txt`, "inside"],
    ] as const) {
      await writeFile(join(workspace, path), body);
      await chown(join(workspace, path), GEM, GEM);
    }
    await mkdir(join(workspace, sibling, "dir"));
    await chown(join(workspace, sibling, "dir"), GEM, GEM);
    victim = await materializeWorkdir(world.dataRoot.path, "bob", "work");
    await writeFile(join(victim, "work/secret.txt"), "bob-secret");
    request = { uid, runtimeScopeId: randomUUID(), workdirPath, fileView: "workdir" };
    const out = await manager.acquire(request, signal());
    if (!out.ok) throw new Error(`acquire refused: ${JSON.stringify(out)}`);
    handle = out.handle;
  }, 120_000);
  afterAll(async () => {
    await world?.cleanup();
  });

  async function sh(script: string, h: SandboxHandle = handle) {
    const out = await manager.exec(h, { cmd: ["sh", "-c", script] }, signal());
    if (!out.ok) throw new Error("sandbox gone");
    return { code: out.result.exitCode, out: out.result.stdout.bytes.toString() };
  }

  it("records the view on the row and the handle", async () => {
    expect(handle.fileView).toBe("workdir");
    const [row] = await world.db
      .select({ fileView: sandboxes.fileView })
      .from(sandboxes)
      .where(eq(sandboxes.sandboxId, handle.sandboxId));
    expect(row?.fileView).toBe("workdir");
  });

  it("reads the rest of the workspace and writes inside the Workdir", async () => {
    const r = await sh(
      `cat ${MOUNT}/${sibling}/keep.txt; echo; cat ../../notes.txt; echo; cat inside.txt; echo;` +
        " mkdir -p outputs/deep && echo made > outputs/deep/new.txt && mv inside.txt moved.txt && echo ok",
    );
    expect(r.out).toBe("sibling-data\ntop-level notes\ninside\nok\n");
    expect(await readFile(join(workspace, workdirPath, "outputs/deep/new.txt"), "utf8")).toBe(
      "made\n",
    );
    expect(await readFile(join(workspace, workdirPath, "moved.txt"), "utf8")).toBe("inside");
  });

  it("refuses every write outside the Workdir, and nothing outside it changes on disk", async () => {
    const before = await snapshot(workspace);
    const inWorkdir = (key: string) => key === workdirPath || key.startsWith(`${workdirPath}/`);
    const attempts = [
      `echo x > ${MOUNT}/${sibling}/keep.txt`,
      `echo x >> ../sibling/keep.txt`,
      `echo x > ../sibling/new.txt`,
      `rm -f ../sibling/keep.txt`,
      `rmdir ../sibling/dir`,
      `mkdir ${MOUNT}/newdir`,
      `touch ${MOUNT}/notes.txt`,
      `chmod 777 ../sibling`,
      `mv ../sibling/keep.txt ./stolen.txt`,
      `ln -s /etc/passwd ${MOUNT}/link`,
      `ln ../sibling/keep.txt ./hardlink`,
      `cd .. && echo x > escaped.txt`,
      `mv ${MOUNT}/${workdirPath} ${MOUNT}/projects/renamed`,
      `cp ${MOUNT}/notes.txt ${MOUNT}/copied.txt`,
    ];
    for (const attempt of attempts) {
      const r = await sh(`{ ${attempt}; } 2>&1; echo "rc=$?"`);
      expect(r.out, attempt).not.toMatch(/rc=0\n$/);
    }
    const write = await sh(`{ echo x > ../sibling/keep.txt; } 2>&1; true`);
    expect(write.out).toMatch(/Read-only file system/i);
    const after = await snapshot(workspace);
    const outside = (m: Map<string, string>) =>
      [...m].filter(([key]) => !inWorkdir(key)).map(([key, v]) => `${key}=${v}`);
    expect(outside(after)).toEqual(outside(before));
    // A hard link cannot cross into the Workdir's mount (mv falls back to a copy, which
    // reading allows; its unlink of the source is what fails).
    expect(after.has(`${workdirPath}/hardlink`)).toBe(false);
  });

  it("shows no trace of another tenant, whose files stay untouched", async () => {
    const before = await snapshot(victim);
    const r = await sh(
      `ls -a ${MOUNT}/..; grep -rl bob-secret /home /tmp 2>/dev/null;` +
        ` find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -name secret.txt -print 2>/dev/null;` +
        ` echo x > ${MOUNT}/../x 2>/dev/null; echo done`,
    );
    expect(r.out).not.toContain("bob-secret");
    expect(r.out).not.toContain(uidDirname("bob"));
    expect(r.out).not.toMatch(/secret\.txt/);
    expect(r.out.trim().endsWith("done")).toBe(true);
    expect(await snapshot(victim)).toEqual(before);
  });

  it("keeps a live sandbox's view: another view is a mismatch while a run uses it", async () => {
    const other = await manager.acquire({ ...request, fileView: "workspace" }, signal());
    expect(other).toMatchObject({ ok: false, reason: "sandbox_identity_mismatch" });
    const same = await manager.acquire(request, signal());
    expect(same).toMatchObject({ ok: true, created: false });
  });

  it("replaces a kept-warm sandbox of the other view, and the new one may write everywhere", async () => {
    expect(await manager.keepWarm(handle, world.db)).toBe("kept");
    const out = await manager.acquire({ ...request, fileView: "workspace" }, signal());
    if (!out.ok) throw new Error(`acquire refused: ${JSON.stringify(out)}`);
    expect(out.created).toBe(true);
    expect(out.handle.generation).toBeGreaterThan(handle.generation);
    expect(out.handle.fileView).toBe("workspace");
    expect(await manager.exec(handle, { cmd: ["true"] }, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });
    const running = (await world.sandboxes()).filter((c) => c.running);
    expect(running.map((c) => c.instanceId)).toEqual([out.handle.instanceId]);
    const r = await sh(`echo from-workspace-view > ../sibling/written.txt && echo ok`, out.handle);
    expect(r.out).toBe("ok\n");
    expect(await readFile(join(workspace, sibling, "written.txt"), "utf8")).toBe(
      "from-workspace-view\n",
    );
  });
});
