import type { MetadataScan } from "../../workspace/index.ts";
import type { ChangeBatch } from "./change-batch.ts";

/** The after-scan of the tree's last command on a root, under the lease of that seq. */
export interface KeptScan {
  readonly leaseSeq: number;
  readonly scan: MetadataScan;
}

/**
 * What the runs of one execution tree share about their change batches: the root run (a
 * root's changes are the union of the tree's batches), the order of the tree's commands,
 * and the batches whose commit failed and are kept for repair, so the root run's ending can
 * retry them and say which are still unrepaired.
 */
export class TreeBatches {
  readonly rootRunId: string;
  readonly #unrepaired = new Map<string, ChangeBatch>();
  /** Per Workdir: at most one scan each (the newest), so memory is one walk per root. */
  readonly #scans = new Map<string, KeptScan>();
  #seq = 0;

  constructor(rootRunId: string) {
    this.rootRunId = rootRunId;
  }

  nextSeq(): number {
    return this.#seq++;
  }

  /** The last after-scan the tree took on this root, for the next command's before-scan. */
  lastScan(workdirPath: string): KeptScan | undefined {
    return this.#scans.get(workdirPath);
  }

  /** Keeps an after-scan (undefined: nothing known, the next command walks again). */
  keepScan(workdirPath: string, kept: KeptScan | undefined): void {
    const current = this.#scans.get(workdirPath);
    // Commands on one root are serialised; an older lease never replaces a newer scan.
    if (current !== undefined && kept !== undefined && current.leaseSeq > kept.leaseSeq) return;
    if (kept === undefined) this.#scans.delete(workdirPath);
    else this.#scans.set(workdirPath, kept);
  }

  keptForRepair(batch: ChangeBatch): void {
    this.#unrepaired.set(batch.batchId, batch);
  }

  repaired(batchId: string): void {
    this.#unrepaired.delete(batchId);
  }

  get unrepaired(): readonly ChangeBatch[] {
    return [...this.#unrepaired.values()];
  }
}
