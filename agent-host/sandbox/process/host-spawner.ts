import { closeSync } from "node:fs";
import { constants } from "node:os";
import { errno as lastErrno, load } from "koffi";

export type SpawnExit = { code: number | null; signal: NodeJS.Signals | null };

export type SpawnRequest = {
  /** Absolute path of the program. */
  file: string;
  argv: readonly string[];
  /** The child's descriptors: index i becomes its fd i (each dup2'd, so without CLOEXEC). */
  fds: readonly number[];
};

/**
 * Starts processes without forking agent-host (decision 0083). Node's `spawn` is a fork of
 * the whole process, synchronous on the event loop (6–29 ms with agent-host's heap); glibc's
 * `posix_spawn` is clone(CLONE_VM | CLONE_VFORK) + exec, which costs the loop well under a
 * millisecond whatever the heap. What libuv's spawn also did is done here too: every signal
 * back to its default and none blocked (agent-host ignores SIGPIPE; a child must not
 * inherit that), only the listed descriptors open (everything agent-host opens is CLOEXEC).
 *
 * The children are reaped here, not by libuv (which waits only for its own pids): on every
 * SIGCHLD each tracked pid is waited for with WNOHANG, so none is left a zombie. The
 * listener is on only while a child is tracked.
 */
export interface HostSpawner {
  /** The child's pid and its exit (resolves once it was reaped). Throws with the errno. */
  spawn(request: SpawnRequest): { pid: number; exited: Promise<SpawnExit> };
  /** A connected, CLOEXEC unix stream socket pair (what libuv gives a child's stdio pipe). */
  socketPair(): [number, number];
}

const AF_UNIX = 1;
const SOCK_STREAM = 1;
const SOCK_CLOEXEC = 0o2000000;
const F_DUPFD_CLOEXEC = 1030;
const WNOHANG = 1;
const ECHILD = 10;
const POSIX_SPAWN_SETSIGMASK = 0x08;
const POSIX_SPAWN_SETSIGDEF = 0x04;
const REAP_FALLBACK_MS = 1_000;
/** Larger than glibc's posix_spawn_file_actions_t (80), posix_spawnattr_t (336), sigset_t (128). */
const OPAQUE_BYTES = 512;

export function createHostSpawner(libraryPath = "libc.so.6"): HostSpawner {
  const lib = load(libraryPath);
  const posixSpawn = lib.func(
    "int posix_spawn(_Out_ int *pid, const char *path, void *actions, void *attr, const char **argv, const char **envp)",
  );
  const actionsInit = lib.func("int posix_spawn_file_actions_init(void *actions)");
  const actionsDup2 = lib.func(
    "int posix_spawn_file_actions_adddup2(void *actions, int fd, int newfd)",
  );
  const actionsDestroy = lib.func("int posix_spawn_file_actions_destroy(void *actions)");
  const attrInit = lib.func("int posix_spawnattr_init(void *attr)");
  const attrFlags = lib.func("int posix_spawnattr_setflags(void *attr, short flags)");
  const attrSigDefault = lib.func("int posix_spawnattr_setsigdefault(void *attr, void *set)");
  const attrSigMask = lib.func("int posix_spawnattr_setsigmask(void *attr, void *set)");
  const attrDestroy = lib.func("int posix_spawnattr_destroy(void *attr)");
  const socketPairFn = lib.func(
    "int socketpair(int domain, int type, int protocol, _Out_ int *sv)",
  );
  const fcntlFn = lib.func("int fcntl(int fd, int cmd, int arg)");
  const waitpidFn = lib.func("int waitpid(int pid, _Out_ int *status, int options)");

  // Every bit set, not sigfillset(3): that leaves out glibc's own real-time signals, which
  // libuv's spawn resets too.
  const all = Buffer.alloc(OPAQUE_BYTES, 0xff);
  const none = Buffer.alloc(OPAQUE_BYTES);
  const tracked = new Map<number, (exit: SpawnExit) => void>();
  // Signal handles do not keep Node's loop alive, a child process does: while one is
  // tracked, so does this timer, which also looks again in case a SIGCHLD went unseen.
  let keepAlive: NodeJS.Timeout | undefined;

  const reap = () => {
    for (const [pid, resolve] of tracked) {
      const status = [0];
      const got = waitpidFn(pid, status, WNOHANG) as number;
      if (got === 0) continue;
      // ECHILD: reaped by someone else; gone all the same, its status unknown.
      if (got < 0 && lastErrno() !== ECHILD) continue;
      tracked.delete(pid);
      resolve(got < 0 ? { code: null, signal: "SIGKILL" } : decodeStatus(status[0] ?? 0));
    }
    if (tracked.size === 0) {
      process.off("SIGCHLD", reap);
      clearInterval(keepAlive);
      keepAlive = undefined;
    }
  };

  return {
    spawn(request) {
      // A source below the child's highest target could be overwritten by an earlier dup2:
      // moved above them first (agent-host's own descriptors are all well above in practice).
      const raised: number[] = [];
      const sources = request.fds.map((fd) => {
        if (fd >= request.fds.length) return fd;
        const high = fcntlFn(fd, F_DUPFD_CLOEXEC, request.fds.length) as number;
        if (high < 0) throw new Error(`fcntl(F_DUPFD_CLOEXEC) failed (errno ${lastErrno()})`);
        raised.push(high);
        return high;
      });
      const actions = Buffer.alloc(OPAQUE_BYTES);
      const attr = Buffer.alloc(OPAQUE_BYTES);
      actionsInit(actions);
      attrInit(attr);
      try {
        sources.forEach((fd, target) => {
          const rc = actionsDup2(actions, fd, target) as number;
          if (rc !== 0) throw new Error(`posix_spawn_file_actions_adddup2 failed (errno ${rc})`);
        });
        attrFlags(attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        attrSigDefault(attr, all);
        attrSigMask(attr, none);
        const pid = [0];
        const rc = posixSpawn(
          pid,
          request.file,
          actions,
          attr,
          [...request.argv, null],
          [null],
        ) as number;
        if (rc !== 0) {
          const error = new Error(`cannot start ${request.file} (errno ${rc})`);
          (error as NodeJS.ErrnoException).code = rc === 2 ? "ENOENT" : `E${rc}`;
          throw error;
        }
        const childPid = pid[0] as number;
        if (tracked.size === 0) {
          process.on("SIGCHLD", reap);
          keepAlive = setInterval(reap, REAP_FALLBACK_MS);
        }
        const exited = new Promise<SpawnExit>((resolve) => tracked.set(childPid, resolve));
        // It may have exited before the listener was on: looked at once now.
        setImmediate(reap);
        return { pid: childPid, exited };
      } finally {
        actionsDestroy(actions);
        attrDestroy(attr);
        for (const fd of raised) closeSync(fd);
      }
    },
    socketPair() {
      const sv = [0, 0];
      if ((socketPairFn(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) as number) !== 0) {
        throw new Error(`socketpair failed (errno ${lastErrno()})`);
      }
      return [sv[0] as number, sv[1] as number];
    },
  };
}

const SIGNAL_NAMES = new Map(
  Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]),
);

function decodeStatus(status: number): SpawnExit {
  const sig = status & 0x7f;
  if (sig === 0) return { code: (status >> 8) & 0xff, signal: null };
  return { code: null, signal: SIGNAL_NAMES.get(sig) ?? "SIGKILL" };
}
