import { type BigIntStats, lstatSync } from "node:fs";
import { errnoError } from "../workspace/errno-error.ts";
import { Errno } from "../workspace/syscalls.ts";

/**
 * lstat with nanoseconds of one name inside a held directory: the /proc magic link pins
 * the directory, and the last name is not followed (the workspace's lstatAt, in bigint).
 */
export function lstatNs(
  deps: { readonly procFdDir?: string },
  dirFd: number,
  name: Buffer,
): BigIntStats | undefined {
  if (name.length === 0 || name.includes(0x2f) || name.equals(DOT) || name.equals(DOTDOT)) {
    throw errnoError(Errno.EINVAL, { op: "restore", path: name.toString() });
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
