import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chown, lstat, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import type { SandboxDriver } from "../../../agent-host/sandbox/driver.ts";
import type { FileView } from "../../../shared/paths/file-view.ts";
import { freshDataRoot } from "../../support/data-root.ts";
import { requireDocker } from "../../support/docker.ts";
import { processTierFixture } from "../../support/process-tier.ts";
import { TIERS } from "./manager-fixture.ts";
import {
  GEM,
  materializeWorkdir,
  silentLogger,
  testConfig,
  testDriver,
  uniqueNodeId,
} from "./sandbox-fixture.ts";

// The attacker's side of every host bind a sandbox gets (docs/architecture.md §5, issue 12 and
// 20): while sandboxes are being created, a separate process keeps swapping a directory
// on the bind's path for a symlink to a directory outside the UserWorkspace and back, as
// fast as it can. Whatever the interleaving, no sandbox may ever see the outside
// directory: a create is refused, or it mounts the real directory. Checked from both
// sides: a sandbox that came up reads the inside marker and writes a probe that lands in
// the real Workdir, and after all rounds the outside tree is byte-for-byte, inode-for-
// inode and mtime-for-mtime what it was.

const WORKDIR = "work/r";
const MOUNT = "/home/gem/user-data";
// The process tier creates in tens of milliseconds (decision 0061): more rounds, so as
// many creates race the swapper's bursts.
const ROUNDS = { container: 12, process: 40 } as const;

/** Which path the attacker swaps, in which file view. */
const CASES: ReadonlyArray<{ view: FileView; swap: "workspace" | "workdir" | "parent" }> = [
  { view: "workspace", swap: "workspace" },
  { view: "workdir", swap: "workspace" },
  { view: "workdir", swap: "workdir" },
  { view: "workdir", swap: "parent" },
];

/** Every entry below `root` (and root itself): type, mode, size, mtime, inode, content. */
async function snapshot(root: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const describe = async (path: string) => {
    const st = await lstat(path);
    const body = st.isFile() ? await readFile(path, "utf8") : "";
    return `${st.mode}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}:${body}`;
  };
  out.set(".", await describe(root));
  async function walk(dir: string, rel: string): Promise<void> {
    for (const name of (await readdir(dir)).sort()) {
      const path = join(dir, name);
      const key = rel === "" ? name : `${rel}/${name}`;
      out.set(key, await describe(path));
      if ((await lstat(path)).isDirectory()) await walk(path, key);
    }
  }
  await walk(root, "");
  return out;
}

type Outcomes = {
  mounted: number;
  refusedBefore: number;
  refusedAfter: number;
  execFailed: number;
};

describe.each(TIERS)("symlink swapped into a bind path during create (%s tier)", (tier) => {
  it.each(CASES)(
    "file view $view, swapping the $swap: never a mount outside the UserWorkspace",
    { timeout: 600_000 },
    async ({ view, swap }) => {
      const dataRoot = await freshDataRoot();
      const nodeId = uniqueNodeId();
      let driver: SandboxDriver;
      let cleanup: () => Promise<void>;
      if (tier === "container") {
        const { docker, image } = requireDocker();
        driver = testDriver(docker, dataRoot.path, testConfig(image));
        cleanup = async () => {
          for (const c of await driver.list(nodeId, AbortSignal.timeout(30_000))) {
            await driver.destroy(c, AbortSignal.timeout(30_000));
          }
        };
      } else {
        const fixture = await processTierFixture({
          dataRoot: dataRoot.path,
          config: testConfig("unused"),
          logger: silentLogger,
        });
        driver = fixture.driver;
        cleanup = () => fixture.cleanup();
      }
      const uid = `racer-${tier}`;
      const workspace = await materializeWorkdir(dataRoot.path, uid, WORKDIR);
      const workdir = join(workspace, WORKDIR);
      await writeFile(join(workdir, "marker.txt"), "inside");
      // The outside tree mirrors the inside one and the sandbox user may write it, so a
      // redirected bind would be usable (and the probe write would land there).
      const outside = join(dataRoot.path, "outside");
      await mkdir(join(outside, WORKDIR), { recursive: true });
      await writeFile(join(outside, WORKDIR, "marker.txt"), "OUTSIDE");
      for (const dir of [outside, join(outside, "work"), join(outside, WORKDIR)]) {
        await chown(dir, GEM, GEM);
      }
      const swapped: Record<typeof swap, [string, string]> = {
        workspace: [workspace, outside],
        workdir: [workdir, join(outside, WORKDIR)],
        parent: [join(workspace, "work"), join(outside, "work")],
      };
      const [victim, target] = swapped[swap];
      const before = await snapshot(outside);

      const swapper = spawn(
        process.execPath,
        [new URL("./symlink-swapper.ts", import.meta.url).pathname, victim, target],
        { stdio: ["pipe", "pipe", "inherit"] },
      );
      const lines = createInterface({ input: swapper.stdout });
      const seen: string[] = [];
      lines.on("line", (l) => seen.push(l));
      const exited = new Promise((resolve) => swapper.once("exit", resolve));
      const outcomes: Outcomes = { mounted: 0, refusedBefore: 0, refusedAfter: 0, execFailed: 0 };
      const probes: string[] = [];
      let resumes = 0;
      const signal = () => AbortSignal.timeout(60_000);
      try {
        await new Promise<void>((resolve) => lines.once("line", () => resolve()));
        // Sends a command and awaits the swapper's answer (symlink-swapper.ts).
        const tell = async (command: "pause" | "resume", answer: string): Promise<void> => {
          const answered = new Promise<void>((resolve) =>
            lines.on("line", function onAnswer(l) {
              if (l !== answer) return;
              lines.off("line", onAnswer);
              resolve();
            }),
          );
          swapper.stdin.write(`${command}\n`);
          await answered;
        };
        const pause = () => tell("pause", "paused");
        for (let g = 1; g <= ROUNDS[tier]; g++) {
          // The last round is the control: the swapper is paused (the real directory in
          // place), so the create must come up. Whether any raced round mounts depends
          // on the interleaving; this one does not, so "sandboxes come up" is asserted
          // without betting on timing.
          const control = g === ROUNDS[tier];
          if (control) await pause();
          const created = await driver
            .create(
              {
                sandboxId: "race00000001",
                generation: g,
                uid,
                runtimeScopeId: randomUUID(),
                workdirPath: WORKDIR,
                nodeId,
                tier,
                fileView: view,
              },
              signal(),
            )
            .catch((e: unknown) => ({ ok: false as const, reason: "error", detail: String(e) }));
          if (control) expect(created.ok, JSON.stringify(created)).toBe(true);
          if (!created.ok) {
            // "changed while the sandbox was created": a bind was made and then found not
            // to be the directory opened no-follow (a mount existed, briefly).
            if (/changed while/.test(created.detail)) outcomes.refusedAfter++;
            else outcomes.refusedBefore++;
            expect(["symlink_refused", "workdir_missing", "error"]).toContain(created.reason);
            // A refused create leaves nothing behind.
            expect(await driver.list(nodeId, signal())).toEqual([]);
            continue;
          }
          // The race was about the create; the command must not race the swapper too.
          if (!control) await pause();
          const probe = `probe-${g}`;
          const ran = await driver
            .exec(
              created.instance,
              {
                cmd: ["sh", "-c", `cat ${MOUNT}/${WORKDIR}/marker.txt && echo ${g} > ${probe}`],
                cwd: `${MOUNT}/${WORKDIR}`,
              },
              signal(),
            )
            .catch(() => undefined);
          if (control) expect(ran?.ok && ran.result.exitCode, JSON.stringify(ran)).toBe(0);
          if (ran?.ok && ran.result.exitCode === 0) {
            expect(ran.result.stdout.bytes.toString()).toBe("inside");
            probes.push(probe);
            outcomes.mounted++;
          } else {
            // The process tier re-verifies its binds per exec and refuses a mismatch.
            outcomes.execFailed++;
          }
          await driver.destroy(created.instance, signal());
          // The swapper has swapped again before the next create starts.
          await tell("resume", "resumed");
          resumes++;
        }
      } finally {
        swapper.stdin.end();
        await exited;
        await cleanup();
      }
      try {
        // Nothing outside changed: not a byte, not an entry, not an mtime.
        expect(await snapshot(outside)).toEqual(before);
        // The swapper put everything back; every probe landed in the real Workdir.
        const landed = (await readdir(workdir)).filter((n) => n.startsWith("probe-")).sort();
        expect(landed).toEqual([...probes].sort());
        // The race really ran: the swapper had swapped before the first create and again
        // before every create that followed a pause (it answers only after a burst), and
        // it kept swapping while the creates ran. Sandboxes came up (the control round at
        // least).
        expect(JSON.parse(seen.at(-1) ?? "{}").swaps).toBeGreaterThanOrEqual(1 + resumes);
        const total =
          outcomes.mounted + outcomes.refusedBefore + outcomes.refusedAfter + outcomes.execFailed;
        expect(total).toBe(ROUNDS[tier]);
        expect(outcomes.mounted, JSON.stringify(outcomes)).toBeGreaterThan(0);
        // Every bind's source is the directory opened no-follow (staged-binds.ts), so
        // the post-start check never finds a bind of something else. Before staged
        // binds it did, in the container tier (Docker had followed the swapped-in
        // symlink: a mount outside existed until the check removed the container).
        // One exception, inside the sandbox only: with the Workdir or its parent
        // swapped, runc can resolve the Workdir bind's *target* (below the read-only
        // workspace bind, where the symlink is) to another place in the container; the
        // check refuses that too, and the outside snapshot above shows nothing leaked.
        const targetRaces = tier === "container" && swap !== "workspace";
        if (!targetRaces) expect(outcomes.refusedAfter, JSON.stringify(outcomes)).toBe(0);
      } finally {
        await dataRoot.remove();
      }
    },
  );
});
