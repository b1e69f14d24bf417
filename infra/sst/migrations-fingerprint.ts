import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A hash of the migrations folder (SQL files and journal): the deploy re-runs the migrator
 * whenever it changes, and on every change of the migrator's own code.
 */
export function migrationsFingerprint(folder: string): string {
  const hash = createHash("sha256");
  const files = readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  for (const file of files) {
    hash.update(file.slice(folder.length));
    hash.update("\0");
    hash.update(readFileSync(file));
  }
  return hash.digest("hex");
}
