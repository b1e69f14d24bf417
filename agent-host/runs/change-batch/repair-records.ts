import { randomUUID } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import { type ChangeBatch, changeBatchSchema } from "./change-batch.ts";

/** Under the agent-host's data root; shared by the nodes, so any node may repair any record. */
export const REPAIR_RECORDS_DIR = "change-batch-repairs";

/**
 * Change batches whose commit failed (a database blip), kept on disk as one JSON file per
 * batch until a repair pass commits them. Written temp-then-rename and fsynced, so a
 * record is either whole or absent after a crash. The directory belongs to the agent-host
 * (never mounted into a sandbox), so its contents are our own; they are still validated
 * when read back, and a file that does not parse is left for an operator, never guessed.
 */
export class RepairRecords {
  readonly #dir: string;

  constructor(dataRoot: string) {
    this.#dir = join(dataRoot, REPAIR_RECORDS_DIR);
  }

  get dir(): string {
    return this.#dir;
  }

  async save(batch: ChangeBatch): Promise<void> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const temp = join(this.#dir, `.tmp-${randomUUID()}`);
    const file = await open(temp, "wx", 0o600);
    try {
      await file.writeFile(JSON.stringify(batch));
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, this.#path(batch.batchId));
  }

  /** Every kept batch, oldest name first; unreadable files are reported, not returned. */
  async list(): Promise<{ batches: ChangeBatch[]; unreadable: string[] }> {
    let names: string[];
    try {
      names = await readdir(this.#dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT")
        return { batches: [], unreadable: [] };
      throw error;
    }
    const batches: ChangeBatch[] = [];
    const unreadable: string[] = [];
    for (const name of names.sort()) {
      if (!name.endsWith(".json")) continue;
      try {
        const text = await readFile(join(this.#dir, name), "utf8");
        batches.push(changeBatchSchema.parse(JSON.parse(text)));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue; // repaired meanwhile
        unreadable.push(name);
      }
    }
    return { batches, unreadable };
  }

  async has(batchId: string): Promise<boolean> {
    try {
      await readFile(this.#path(batchId));
      return true;
    } catch {
      return false;
    }
  }

  /** After the batch is committed; a record already gone (another pass) is fine. */
  async remove(batchId: string): Promise<void> {
    await unlink(this.#path(batchId)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
  }

  #path(batchId: string): string {
    return join(this.#dir, `${batchId}.json`);
  }
}
