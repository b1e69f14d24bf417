import { lstatSync } from "node:fs";
import { errnoError } from "../workspace/errno-error.ts";
import { Errno } from "../workspace/syscalls.ts";
import type { CheckpointSyscalls, NsStat } from "./checkpoint-syscalls.ts";

/**
 * lstat with nanoseconds of one name inside a held directory, the last name not followed:
 * statx relative to the descriptor where the checkpoint syscalls offer it (decision 0172),
 * else through the /proc magic link, which pins the directory (the workspace's lstatAt, in
 * bigint). Undefined when the name is gone.
 */
export function lstatNs(
  deps: { readonly procFdDir?: string; readonly cp?: Pick<CheckpointSyscalls, "statAt"> },
  dirFd: number,
  name: Buffer,
): NsStat | undefined {
  if (
    name.length === 0 ||
    name.includes(0x2f) ||
    name.includes(0) ||
    name.equals(DOT) ||
    name.equals(DOTDOT)
  ) {
    throw errnoError(Errno.EINVAL, { op: "restore", path: name.toString() });
  }
  if (deps.cp?.statAt !== undefined) {
    const st = deps.cp.statAt(dirFd, name);
    if (st.ok) return st.value;
    if (st.errno === Errno.ENOENT) return undefined;
    throw errnoError(st.errno, { op: "checkpoint", path: name.toString() });
  }
  const prefix = Buffer.from(`${deps.procFdDir ?? "/proc/self/fd"}/${dirFd}/`);
  try {
    return lstatSync(Buffer.concat([prefix, name]), { bigint: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

const DOT = Buffer.from(".");
const DOTDOT = Buffer.from("..");
