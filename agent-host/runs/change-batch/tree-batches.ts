import type { ChangeBatch } from "./change-batch.ts";

/**
 * What the runs of one execution tree share about their change batches: the root run (a
 * root's changes are the union of the tree's batches), the order of the tree's commands,
 * and the batches whose commit failed and are kept for repair, so the root run's ending can
 * retry them and say which are still unrepaired.
 */
export class TreeBatches {
  readonly rootRunId: string;
  readonly #unrepaired = new Map<string, ChangeBatch>();
  #seq = 0;

  constructor(rootRunId: string) {
    this.rootRunId = rootRunId;
  }

  nextSeq(): number {
    return this.#seq++;
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
