/** What a directory entry says it is (d_type); `unknown` where the filesystem does not say. */
export type DirentKind = "file" | "dir" | "other" | "unknown";

/** The parts of a Dirent that read its d_type (a Buffer-named Dirent has them too). */
type TypedEntry = {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isBlockDevice(): boolean;
  isCharacterDevice(): boolean;
};

/**
 * The entry's kind from its d_type alone, no system call: walks that never follow a link
 * treat symlinks, FIFOs, sockets and devices alike (`other`), and look again themselves
 * where the filesystem gives no type (`unknown`).
 */
export function direntKind(entry: TypedEntry): DirentKind {
  if (entry.isFile()) return "file";
  if (entry.isDirectory()) return "dir";
  if (
    entry.isSymbolicLink() ||
    entry.isFIFO() ||
    entry.isSocket() ||
    entry.isBlockDevice() ||
    entry.isCharacterDevice()
  ) {
    return "other";
  }
  return "unknown";
}
