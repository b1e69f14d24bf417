import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rename, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const SOURCE = join(import.meta.dirname, "native/inotify-hold.c");

/**
 * The inotify-hold helper (native/inotify-hold.c) as a static binary, so it runs in a
 * sandbox whose runtime is only busybox. Built once per temp dir (atomically: test files
 * run in parallel) with the C compiler scripts/ensure-system.sh installs.
 */
export async function inotifyHoldBinary(): Promise<string> {
  const out = join(tmpdir(), "workcell-test-inotify-hold");
  if (
    await stat(out).then(
      () => true,
      () => false,
    )
  )
    return out;
  const staging = `${out}.${randomBytes(4).toString("hex")}`;
  await run("cc", ["-static", "-O2", "-o", staging, SOURCE], { timeout: 60_000 }).catch(
    (error: Error) => {
      throw new Error(
        `cannot build the inotify test helper (${error.message}): apt-get install -y gcc libc6-dev (scripts/ensure-system.sh)`,
      );
    },
  );
  await rename(staging, out);
  return out;
}
