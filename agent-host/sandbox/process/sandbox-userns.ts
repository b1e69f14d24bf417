import { spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { SANDBOX_GID, SANDBOX_UID } from "./bwrap-args.ts";
import type { HostMounts } from "./host-mounts.ts";

/**
 * Host uids that own sandbox user namespaces: a random one per generation, from a range
 * no distribution hands out (uids past 2^30), so it owns no file and no other process.
 * Two live generations draw the same one with probability about n^2 / 2^31 (n = 100:
 * 5e-6); they would then share one kernel budget, nothing else.
 */
const OWNER_UID_MIN = 2 ** 30;
const OWNER_UID_MAX = 2 ** 31 - 2;
const HOLDER_TIMEOUT_MS = 10_000;
/** util-linux's unshare, by name (like umount), on a fixed PATH. */
const HOLDER_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The holder: `unshare --user --keep-caps`, started as the owner uid (Node's spawn
 * uid/gid: no supplementary group, no host capability), makes the namespace and keeps
 * the capabilities it has there across the exec of `sh` (ambient), which uses them once to
 * forbid nested user namespaces, prints `ready`, then waits for stdin to close while root
 * writes the maps and pins the namespace.
 */
const HOLDER_SCRIPT =
  "echo 0 > /proc/sys/user/max_user_namespaces && echo ready && { read _ || :; }";

/**
 * Makes the user namespace of one process-tier generation and pins it at `nsFile` (a bind
 * mount of the nsfs inode, as `ip netns` does, so it lives as long as the generation and
 * survives an agent-host restart). Returns the host uid that owns it.
 *
 * Why (docs/architecture.md §9, "tenants share no kernel budget"): the kernel counts inotify
 * instances and watches, user namespaces and processes per (user namespace, uid), and
 * charges every level up to the initial namespace to the uid that *created* each
 * namespace. bwrap creating the namespace as uid 1000 charged every sandbox of every
 * tenant (and every container, which runs as host 1000) to the one host uid 1000: one
 * tenant exhausting 128 inotify instances broke everyone's. Here each generation's
 * namespace is created by its own unused host uid, so each gets the host's whole
 * per-uid budget, and no sandbox can spend another's.
 *
 * The maps: sandbox uid/gid 1000 is host 1000 (UserWorkspace files stay 1000:1000 on the
 * host), and nothing else is mapped. bwrap runs as the owner uid (joining the namespace
 * with --userns needs that; the owner has the namespace's capabilities, no host ones),
 * sets the sandbox up, then becomes 1000 with no capabilities. `max_user_namespaces = 0` in
 * the namespace replaces bwrap's --disable-userns (which 0.8 allows only with
 * --unshare-user): nothing in the sandbox can make a namespace of its own.
 */
export async function createSandboxUserns(
  nsFile: string,
  mounts: HostMounts,
  signal: AbortSignal,
): Promise<number> {
  const owner = randomInt(OWNER_UID_MIN, OWNER_UID_MAX);
  await writeFile(nsFile, "", { mode: 0o600 });
  const holder = spawn("unshare", ["--user", "--keep-caps", "--", "sh", "-c", HOLDER_SCRIPT], {
    uid: owner,
    gid: owner,
    stdio: ["pipe", "pipe", "pipe"],
    env: { PATH: HOLDER_PATH },
    signal,
    timeout: HOLDER_TIMEOUT_MS,
  });
  const exited = new Promise<number | null>((resolve) => holder.once("close", resolve));
  const stderr: string[] = [];
  holder.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  holder.once("error", () => {});
  const lines = createInterface({ input: holder.stdout })[Symbol.asyncIterator]();
  const expectLine = async (want: string): Promise<void> => {
    const line = await lines.next();
    if (line.done || line.value !== want) {
      throw new Error(
        `the user namespace holder did not say ${want}: ${stderr.join("").trim() || "it exited"}`,
      );
    }
  };
  try {
    await expectLine("ready");
    const pid = holder.pid;
    if (pid === undefined) throw new Error("the user namespace holder has no pid");
    // Root writes them (CAP_SETUID/CAP_SETGID in the parent namespace): the owner itself
    // could map only its own uid.
    await writeFile(`/proc/${pid}/uid_map`, `${SANDBOX_UID} ${SANDBOX_UID} 1\n`);
    await writeFile(`/proc/${pid}/gid_map`, `${SANDBOX_GID} ${SANDBOX_GID} 1\n`);
    mounts.bind(`/proc/${pid}/ns/user`, nsFile);
    holder.stdin.end();
    const code = await exited;
    if (code !== 0) throw new Error(`the user namespace holder exited with ${code}`);
    return owner;
  } catch (error) {
    holder.kill("SIGKILL");
    await exited;
    throw error;
  }
}
