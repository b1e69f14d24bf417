import { fstatSync, lstatSync, readFileSync, type Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import type { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { FileView } from "../../../shared/paths/file-view.ts";
import { type MountKey, sandboxMounts } from "../instance/mount-table.ts";
import {
  bwrapArgs,
  bwrapFileView,
  CHILD_FD,
  type SandboxSources,
  TRAMPOLINE_GO,
} from "./bwrap-args.ts";
import { encodeBwrapArgs, type Trampoline } from "./exec-trampoline.ts";

/** Descriptors of a sandbox's bind sources, opened no-follow: what each mount must be. */
export type ExecMounts = Record<Exclude<keyof SandboxSources, "workdir">, FileHandle> & {
  workdir?: FileHandle;
};

/**
 * A generation's sandbox built ahead of its exec (decision 0088): bwrap has made every
 * namespace and mount and sits in `read(<block fd>)`; every mount was verified from the
 * host. Nothing of an exec has run or can run in it until process-exec.ts writes the
 * exec's spec and releases the block fd: the command line bwrap got names only the exec
 * shim, which bwrap has not even started yet.
 */
export type PrebuiltSandbox = {
  /** bwrap's parent (the trampoline that became bwrap) and its pipes. */
  readonly trampoline: Trampoline;
  /** The sandbox's first process (host pid), blocked on the block fd. */
  readonly sandboxPid: number;
  /** The file view it was built for (the generation's own labels decide). */
  readonly fileView: FileView;
  /** The id of the mount found verified at each mount point (see stillAsVerified). */
  readonly mountIds: ReadonlyMap<string, string>;
};

export type PrebuildTarget = {
  trampoline: Trampoline;
  /** The generation's descriptors: what to bind, and what each mount must be. */
  generation: { sources: SandboxSources; handles: ExecMounts };
  fileView: FileView;
  /** Sandbox path of the Workdir in the `workdir` file view. */
  workdirTarget?: string;
  /** Host path of the exec shim (preflight checked it). */
  execShim: string;
};

/** A bind that did not land on the directory agent-host opened: the sandbox is refused. */
export class MountVerificationError extends Error {
  override readonly name = "MountVerificationError";
}

/**
 * Sends the go-ahead once the trampoline sits in its exec cgroups (so bwrap and all it
 * starts are the exec's from the start, decision 0065), waits until bwrap's sandbox is
 * blocked on `--block-fd`, and verifies every mount from the host. Throws (the caller
 * ends the trampoline) when the join failed, bwrap died, a mount is wrong, or `stop` fired.
 */
export async function prebuildSandbox(
  target: PrebuildTarget,
  stop: AbortSignal,
): Promise<PrebuiltSandbox> {
  const { trampoline, generation } = target;
  const { exited, pipe } = trampoline;
  const stopped = new Promise<undefined>((resolve) => {
    if (stop.aborted) resolve(undefined);
    stop.addEventListener("abort", () => resolve(undefined), { once: true });
  });
  const unlessStopped = <T>(promise: Promise<T>) =>
    Promise.race([promise, exited.then(() => undefined), stopped]);
  // What each mount must be: the descriptors bwrap is about to bind.
  const expected = expectedMounts(generation.handles, target);
  const args = encodeBwrapArgs(
    bwrapArgs({
      sources: generation.sources,
      execShim: target.execShim,
      ...(target.workdirTarget === undefined ? {} : { workdirTarget: target.workdirTarget }),
    }),
  );
  // A failed join rejects here: no go-ahead, bwrap never runs.
  const joined = await unlessStopped(trampoline.joined.then(() => true));
  if (joined === true && !stop.aborted && trampoline.alive()) {
    pipe(CHILD_FD.args).end(args);
    pipe(CHILD_FD.go).end(TRAMPOLINE_GO);
  }
  const reported = joined ? await unlessStopped(readChildPid(pipe(CHILD_FD.status))) : undefined;
  const sandboxPid =
    reported === undefined ? undefined : await unlessStopped(waitUntilBlocked(reported, stop));
  if (stop.aborted) throw new Error("the sandbox's build was stopped");
  if (sandboxPid === undefined) {
    const outcome = await exited;
    throw new Error(
      `bubblewrap could not start the sandbox (exit ${outcome.code ?? outcome.signal}): ${await stderrOf(trampoline)}`,
    );
  }
  const wrong = firstWrongMount(sandboxPid, expected);
  if (wrong !== undefined) {
    throw new MountVerificationError(
      `${wrong} inside the sandbox is not the directory agent-host opened; the sandbox was refused before any command could start`,
    );
  }
  const mountIds = mountIdsAt(
    sandboxPid,
    expected.map(({ target: point }) => point),
  );
  // Read after the lstats: a mount swapped between the two is caught by stillAsVerified.
  if (mountIds === undefined) {
    throw new MountVerificationError(
      "a mount inside the sandbox could not be found in its mount table; the sandbox was refused",
    );
  }
  return { trampoline, sandboxPid, fileView: target.fileView, mountIds };
}

/**
 * Whether a pre-built sandbox still waits on its block fd with every verified mount in
 * place. A standby waits longer than an exec's own build did: meanwhile a rename or
 * removal of a mount point from outside its namespace (the Workdir renamed by another
 * sandbox of the same user, say) detaches that mount there, and the path would then
 * resolve to something never verified. The mount table by id says so: a mount's root
 * cannot change and only root can mount in the namespace. Synchronous: procfs files the
 * kernel fills in microseconds (decision 0028); checked again right before the release.
 */
export function stillAsVerified(sandbox: PrebuiltSandbox): boolean {
  return stillBlocked(sandbox.sandboxPid) && mountsAsVerified(sandbox);
}

/** Every verified mount still at its point (stillAsVerified, for a sandbox known blocked). */
export function mountsAsVerified(sandbox: PrebuiltSandbox): boolean {
  const now = mountIdsAt(sandbox.sandboxPid, [...sandbox.mountIds.keys()]);
  return now !== undefined && [...sandbox.mountIds].every(([point, id]) => now.get(point) === id);
}

/**
 * The id of the topmost mount at each point, from /proc/<pid>/mountinfo (paths as the
 * sandbox sees them; the kernel escapes space, tab, newline and backslash as octal).
 * Undefined when a point has no mount or the table cannot be read.
 */
function mountIdsAt(pid: number, points: readonly string[]): Map<string, string> | undefined {
  const table = readProcFile(`/proc/${pid}/mountinfo`);
  if (table === undefined) return undefined;
  const wanted = new Set(points);
  const ids = new Map<string, string>();
  for (const line of table.split("\n")) {
    const fields = line.split(" ");
    const point = fields[4]?.replace(/\\([0-7]{3})/g, (_, o: string) =>
      String.fromCharCode(Number.parseInt(o, 8)),
    );
    // Later lines are mounts made later: on top of an earlier one at the same point.
    if (point !== undefined && wanted.has(point) && fields[0]) ids.set(point, fields[0]);
  }
  return points.every((p) => ids.has(p)) ? ids : undefined;
}

/**
 * Whether a pre-built sandbox is still waiting on its block fd (not killed meanwhile).
 * Synchronous: a procfs file the kernel fills in microseconds (decision 0028).
 */
export function stillBlocked(pid: number): boolean {
  const text = readProcFile(`/proc/${pid}/syscall`);
  return text !== undefined && blockedRead().test(text);
}

/** What bwrap wrote on stderr so far (its setup failed: it exited). */
async function stderrOf(trampoline: Trampoline): Promise<string> {
  const stream = trampoline.child.stderr;
  if (!stream) return "no message";
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  await Promise.race([trampoline.outputDone, sleep(1_000)]);
  return Buffer.concat(chunks).toString("utf8").trim() || "no message";
}

/** bwrap's first JSON status document names the sandbox's first process (a host pid). */
function readChildPid(status: Readable): Promise<number | undefined> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const match = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (match) {
        status.off("data", onData);
        // The rest (the exit-code document) is for nobody: left flowing, unread.
        status.resume();
        resolve(Number(match[1]));
      }
    };
    status.on("data", onData);
    status.once("end", () => resolve(undefined));
    status.once("error", () => resolve(undefined));
  });
}

/** How often the setup's progress is looked at (it takes a few milliseconds). */
const SETUP_POLL_MS = 1;
const READ_SYSCALL: Partial<Record<NodeJS.Architecture, number>> = { x64: 0, arm64: 63 };
const blockedRead = () =>
  new RegExp(`^${READ_SYSCALL[process.arch] ?? 0} 0x${CHILD_FD.block.toString(16)} `);

/**
 * bwrap reports the pid right after clone, before the child has built its mounts. The
 * child is done with them when it sits in `read(<block fd>, …, 1)`, waiting for our
 * release: /proc/<pid>/syscall shows exactly that (number 0 = read on x86_64; the first
 * argument is the fd). Returns the pid then, undefined if it died first.
 */
async function waitUntilBlocked(pid: number, stop: AbortSignal): Promise<number | undefined> {
  const blocked = blockedRead();
  while (!stop.aborted) {
    // Read synchronously: a procfs file the kernel fills in microseconds, never disk I/O.
    const text = readProcFile(`/proc/${pid}/syscall`);
    if (text === undefined) return undefined;
    if (blocked.test(text)) return pid;
    await sleep(SETUP_POLL_MS);
  }
  return undefined;
}

function readProcFile(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

type ExpectedMount = { target: string; stat: Stats | undefined };

/**
 * Device and inode of everything that is bound, with its mount point: every process row
 * of the mount table for the command's view (mount-table.ts), the runtime root included.
 */
function expectedMounts(
  mounts: ExecMounts,
  target: Pick<PrebuildTarget, "workdirTarget" | "execShim">,
): ExpectedMount[] {
  const handles: Partial<Record<MountKey, FileHandle>> = mounts;
  return sandboxMounts("process", bwrapFileView(target), target.workdirTarget ?? "").map(
    (mount) => {
      // The shim's path is below root's directories only (preflight), so its lstat now is
      // what bwrap binds; the check inside catches anything else all the same.
      if (mount.key === "execShim") {
        return { target: mount.target, stat: lstatOrUndefined(target.execShim) };
      }
      // fstat of a descriptor agent-host holds: no path, no disk, microseconds (decision 0086).
      const handle = handles[mount.key];
      return {
        target: mount.target,
        stat: handle === undefined ? undefined : fstatSync(handle.fd),
      };
    },
  );
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Stats each mount point through the sandbox's own root (as root on the host, via
 * /proc/<pid>/root) without following a final symlink, and compares device and inode
 * with what was bound: a bind redirected by any path trick shows up here. Synchronous
 * (decision 0086): each path is a mount point bwrap has just made.
 */
function firstWrongMount(pid: number, expected: ExpectedMount[]): string | undefined {
  return expected.find(({ target, stat }) => {
    const inside = lstatOrUndefined(`/proc/${pid}/root${target}`);
    return !stat || !inside || inside.dev !== stat.dev || inside.ino !== stat.ino;
  })?.target;
}
