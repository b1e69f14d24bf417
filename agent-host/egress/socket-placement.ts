import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { chmod, type FileHandle, mkdir, open, rm, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Name of the socket in its directory. */
const SOCKET_NAME = "proxy.sock";

/**
 * Where one sandbox's socket lives: a fresh directory of agent-host's (0755, an
 * unguessable name) inside a directory the sandbox sees, e.g. the process tier's host side
 * of the generation's /tmp. The sandbox may own that outer directory, so nothing below is
 * touched by name again after the directory was made: it is opened no-follow, checked to
 * be ours, and the socket is made, chmod-ed and removed through /proc/self/fd/<n>, which
 * the kernel resolves to that directory whatever the sandbox renames or plants meanwhile.
 */
export type SocketPlacement = {
  /** The path agent-host listens on (through the directory's descriptor). */
  readonly listenPath: string;
  /** The socket relative to the outer directory (`<dir>/proxy.sock`). */
  readonly relativePath: string;
  /** Makes the socket connectable by the sandbox's user (its directory is agent-host's). */
  allowConnect(): Promise<void>;
  /** A world-readable file beside the socket (the sandbox's CA bundle); removed with it. */
  addFile(name: string, text: string): Promise<string>;
  remove(): Promise<void>;
};

export async function placeSocket(outerDir: string): Promise<SocketPlacement> {
  const name = `.workcell-egress-${randomBytes(12).toString("hex")}`;
  const path = join(outerDir, name);
  // mkdir fails on anything already there (a name the sandbox could not have guessed).
  await mkdir(path, { mode: 0o755 });
  let dir: FileHandle;
  try {
    dir = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    await rmdir(path).catch(() => {});
    throw error;
  }
  const stats = await dir.stat();
  if (!stats.isDirectory() || stats.uid !== process.getuid?.()) {
    await dir.close();
    throw new Error("the egress socket's directory is not agent-host's");
  }
  const listenPath = `/proc/self/fd/${dir.fd}/${SOCKET_NAME}`;
  const files: string[] = [];
  return {
    listenPath,
    relativePath: `${name}/${SOCKET_NAME}`,
    allowConnect: () => chmod(listenPath, 0o666),
    async addFile(file, text) {
      if (!/^[a-z][a-z0-9.-]*$/.test(file)) throw new Error(`not a plain file name: ${file}`);
      const at = `/proc/self/fd/${dir.fd}/${file}`;
      // wx: the directory is agent-host's and fresh; nothing may be there already.
      await writeFile(at, text, { mode: 0o644, flag: "wx" });
      files.push(at);
      return `${name}/${file}`;
    },
    async remove() {
      await rm(listenPath, { force: true }).catch(() => {});
      for (const file of files) await rm(file, { force: true }).catch(() => {});
      await dir.close().catch(() => {});
      // By name, but rmdir neither follows a link nor removes anything that is not empty.
      await rmdir(path).catch(() => {});
    },
  };
}
