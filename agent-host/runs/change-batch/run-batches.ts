import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import type { ListenFn } from "../../../shared/listen/listen-fn.ts";
import type { RunQuotaGate } from "../../quota/run-quota-gate.ts";
import type { UserWorkspaces } from "../../workspace/index.ts";
import { openWorkdirScanner, type WorkdirScanner } from "../../workspace/open-workdir-scanner.ts";
import { ExecutionLeases } from "../execution-lease/execution-leases.ts";
import { LeaseWakeups } from "../execution-lease/lease-wakeups.ts";
import type { LendSlot } from "../fair-share/lent-slots.ts";
import { databaseRetryOf, type RunWorkerLimits } from "../run-limits.ts";
import { LeasedCommands } from "./leased-commands.ts";
import { runRepairPass } from "./repair-pass.ts";
import { RepairRecords } from "./repair-records.ts";

export interface RunBatchesDeps {
  readonly db: Db;
  readonly nodeId: string;
  /** The agent-host's data root: repair records live under it (repair-records.ts). */
  readonly dataRoot: string;
  readonly userWorkspaces: UserWorkspaces;
  readonly listen?: ListenFn;
  readonly limits: RunWorkerLimits;
  readonly logger: Logger;
  /** Every command is admitted and counted against the UserWorkspace quota. */
  readonly quota?: RunQuotaGate;
  /** A command waiting for its lease lends its run's worker slot (decision 0141). */
  readonly lendSlot?: LendSlot;
}

/**
 * The run worker's Execution Lease and change batch machinery, wired once: the lease
 * service with its LISTEN, the leased command runner the executions use, and the repair
 * loop (a pass at start, then every `changeRepairIntervalMs`).
 */
export class RunBatches {
  readonly commands: LeasedCommands;
  readonly #deps: RunBatchesDeps;
  readonly #wakeups: LeaseWakeups;
  readonly #records: RepairRecords;
  readonly #scanner: WorkdirScanner;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(deps: RunBatchesDeps) {
    this.#deps = deps;
    const { limits, logger } = deps;
    this.#wakeups = new LeaseWakeups({
      ...(deps.listen === undefined ? {} : { listen: deps.listen }),
      logger,
    });
    this.#records = new RepairRecords(deps.dataRoot);
    this.#scanner = openWorkdirScanner(deps.dataRoot, logger);
    this.commands = new LeasedCommands({
      db: deps.db,
      leases: new ExecutionLeases({
        db: deps.db,
        nodeId: deps.nodeId,
        wakeups: this.#wakeups,
        pollIntervalMs: limits.leasePollIntervalMs,
        statementTimeoutMs: limits.leaseStatementTimeoutMs,
        logger,
        ...(deps.lendSlot === undefined ? {} : { lendSlot: deps.lendSlot }),
        retry: databaseRetryOf(limits),
      }),
      repairs: this.#records,
      userWorkspaces: deps.userWorkspaces,
      limits: {
        scan: {
          maxEntries: limits.changesMaxEntries,
          maxDepth: limits.changesMaxDepth,
          timeoutMs: limits.changesSnapshotTimeoutMs,
        },
        maxBatchItems: limits.changesMaxRecorded,
      },
      logger,
      ...(deps.quota === undefined ? {} : { quota: deps.quota }),
      scanner: this.#scanner.scanner,
      peeker: this.#scanner.peeker,
    });
  }

  async start(): Promise<void> {
    await this.#wakeups.start();
    this.#runPass();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#pass;
    await this.#wakeups.stop();
    this.#scanner.close();
  }

  #runPass(): void {
    if (this.#stopped) return;
    this.#pass = runRepairPass({
      db: this.#deps.db,
      records: this.#records,
      logger: this.#deps.logger,
    })
      .then((result) => {
        if (result.committed + result.alreadyCommitted > 0) {
          this.#deps.logger.info(result, "change batch repair pass committed kept batches");
        }
      })
      .catch((error: unknown) => {
        this.#deps.logger.warn({ err: error }, "change batch repair pass failed");
      })
      .finally(() => {
        if (this.#stopped) return;
        this.#timer = setTimeout(() => this.#runPass(), this.#deps.limits.changeRepairIntervalMs);
        this.#timer.unref();
      });
  }
}
