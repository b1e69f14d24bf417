import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import type { ChangeBatchTool } from "../../../shared/db/schema.ts";
import { domainError, domainReasonOf } from "../../../shared/errors/domain-errors.ts";
import { commandGrowth, scanBytes } from "../../quota/command-growth.ts";
import { overQuota, type QuotaAdmission, type RunQuotaGate } from "../../quota/run-quota-gate.ts";
import { scanGrowth } from "../../quota/scan-growth.ts";
import type { WorkspaceUsage } from "../../quota/workspace-usage.ts";
import type {
  MetadataScan,
  MetadataScanLimits,
  MetadataScanner,
  UserWorkspaces,
} from "../../workspace/index.ts";
import type { RunFence } from "../claim/run-fence.ts";
import type { ExecutionLeases } from "../execution-lease/execution-leases.ts";
import type { RunSilence } from "../run-silence.ts";
import { batchCommandText, type ChangeBatch } from "./change-batch.ts";
import { commitChangeBatch } from "./commit-change-batch.ts";
import type { RepairRecords } from "./repair-records.ts";
import type { TreeBatches } from "./tree-batches.ts";
import { diffWorkdirSnapshots, UNKNOWN_CHANGES } from "./workdir-changes.ts";

/** The after-scan is aborted at this multiple of its own time budget. */
const HARD_STOP_FACTOR = 2;

export interface LeasedCommandLimits {
  readonly scan: MetadataScanLimits;
  /** Facts kept per batch; past it the batch is truncated (MAX_BATCH_ITEMS at most). */
  readonly maxBatchItems: number;
}

export interface LeasedCommandsDeps {
  readonly db: Db;
  readonly leases: ExecutionLeases;
  readonly repairs: RepairRecords;
  readonly userWorkspaces: Pick<UserWorkspaces, "openExistingWorkdir"> &
    Partial<Pick<UserWorkspaces, "openUserWorkspace">>;
  readonly limits: LeasedCommandLimits;
  readonly logger: Logger;
  /**
   * The UserWorkspace quota (accounting mode): a uid over it gets no next command, and
   * each command's growth is counted. Without it (tests of the lease alone) nothing is checked.
   */
  readonly quota?: RunQuotaGate;
  /** Incremental scans (incremental-scans.ts); without it every scan walks in full. */
  readonly scanner?: MetadataScanner;
  /**
   * The scanner for looks while a command runs (IncrementalScans.peek), undefined where
   * scans walk in full: the quota watch then walks the UserWorkspace (decision 0163).
   */
  readonly peeker?: () => MetadataScanner | undefined;
}

/** Who runs a command and where: the run (fence), its writable root, its tree. */
export interface CommandScope {
  readonly fence: RunFence;
  readonly workdirPath: string;
  readonly tree: TreeBatches;
  /** The run's logger (uid, run_id, request_id, sandbox); default: one with uid and run_id. */
  readonly logger?: Logger;
  /** The run's silence (decision 0148): a command waits out a suspension and counts as busy. */
  readonly silence?: RunSilence;
}

export interface CommandInfo {
  readonly tool: ChangeBatchTool;
  readonly command: string;
}

/**
 * Runs commands under the Execution Lease with a change batch each
 * (docs/architecture.md §5, docs/decisions/0014): acquire the lease on (uid, Workdir), snapshot
 * the Workdir's metadata, run the command, scan again (no-follow, bounded), and commit the
 * difference as one batch in the transaction that releases the lease. A failed commit keeps
 * the batch as a repair record on disk (repair-pass.ts commits it later, exactly once) and
 * releases the lease on its own; if even that fails, the lease lapses with the run lease.
 */
export class LeasedCommands {
  readonly #deps: LeasedCommandsDeps;

  constructor(deps: LeasedCommandsDeps) {
    this.#deps = deps;
  }
  /**
   * Runs `fn` holding the Execution Lease on the run's Workdir, with no change batch: for
   * work that only reads the Workdir while no command may write it (a before-run
   * checkpoint, docs/architecture.md §16). Undefined when the lease was not granted (the
   * run is not live any more); the wait ends with `signal`.
   */
  async withLease<T>(
    fence: RunFence,
    workdirPath: string,
    signal: AbortSignal,
    fn: () => Promise<T>,
  ): Promise<T | undefined> {
    const acquired = await this.#deps.leases.acquire(fence, workdirPath, signal);
    if (!acquired.ok) return undefined;
    try {
      return await fn();
    } finally {
      await this.#deps.leases.release(acquired.lease).catch((error: unknown) => {
        this.#deps.logger.warn(
          { err: error },
          "execution lease release failed; it lapses with the run lease",
        );
      });
    }
  }

  /**
   * `body` runs only once the lease is held; aborting `signal` while waiting gives up the
   * place in the queue and throws the signal's reason without running anything. A body
   * that throws still gets its batch (what it changed before failing is a fact) and the
   * error is rethrown. The run not being live any more throws `lease_lost`. A uid over its
   * workspace quota gets `quota_exceeded` before anything (no lease, no batch, no command).
   */
  async run<T>(
    scope: CommandScope,
    info: CommandInfo,
    signal: AbortSignal,
    body: (signal: AbortSignal) => Promise<T>,
  ): Promise<{ value: T; batch: ChangeBatch }> {
    const { fence } = scope;
    const log = scope.logger ?? this.#deps.logger.child({ uid: fence.uid, run_id: fence.runId });
    // The usage is measured first (cached, no statement); the limits are read by the
    // lease's own statement, which does not arrive over quota (docs/decisions/0067).
    const admission = await this.#deps.quota?.measure(fence.uid, signal);
    // From here until its after-scan the command may act in the sandbox (decision 0148).
    const leave = (await scope.silence?.enter(signal)) ?? (() => {});
    try {
      return await this.#leased(scope, info, signal, body, { admission, log, leave });
    } finally {
      leave();
    }
  }

  async #leased<T>(
    scope: CommandScope,
    info: CommandInfo,
    signal: AbortSignal,
    body: (signal: AbortSignal) => Promise<T>,
    {
      admission,
      log,
      leave,
    }: { admission: QuotaAdmission | undefined; log: Logger; leave: () => void },
  ): Promise<{ value: T; batch: ChangeBatch }> {
    const { fence, workdirPath, tree } = scope;
    const kept = tree.lastScan(workdirPath);
    const acquired = await this.#deps.leases.acquire(
      fence,
      workdirPath,
      signal,
      kept?.leaseSeq,
      admission,
      tree.rootRunId,
    );
    if (!acquired.ok) {
      if (acquired.reason === "cancelled") throw signal.reason;
      if (acquired.reason === "over_quota" && admission !== undefined) {
        throw overQuota(acquired.quota, admission.used);
      }
      throw domainError("lease_lost", { details: { run_id: fence.runId } });
    }
    const lease = acquired.lease;
    let released = false;
    try {
      const scanBudget = this.#deps.limits.scan.timeoutMs * HARD_STOP_FACTOR;
      // The tree's last after-scan of this root is the before-scan when no lease on an
      // overlapping root was granted since (docs/decisions/0036): one walk per command.
      const before =
        kept !== undefined && lease.rootUnchanged
          ? kept.scan
          : await this.#scan(
              fence.uid,
              workdirPath,
              AbortSignal.any([signal, AbortSignal.timeout(scanBudget)]),
              log,
              signal,
            );
      const startedAt = new Date().toISOString();
      let outcome: { ok: true; value: T } | { ok: false; error: unknown };
      // Accounting mode: the command is stopped once the workspace passes its quota
      // (decision 0143), instead of only the next command being refused.
      const stop = new AbortController();
      const ended = new AbortController();
      // Where the whole UserWorkspace can be peeked, the look is its usage (primed here,
      // before the command, so the first look is incremental too); a `workspace` file view
      // writes outside the Workdir, which Workdir peeks alone did not see (decision 0180).
      const usage =
        this.#deps.quota !== undefined && lease.quota !== undefined
          ? await this.#workspaceLook(
              fence.uid,
              AbortSignal.any([signal, AbortSignal.timeout(scanBudget)]),
            )
          : undefined;
      const watch =
        this.#deps.quota !== undefined && lease.quota !== undefined
          ? this.#deps.quota.watch(
              fence.uid,
              lease.quota,
              ended.signal,
              (error) => {
                // The stop first: the writer is frozen within this turn (frozen-stop.ts).
                stop.abort(error);
                log.warn({ err: error }, "command stopped: workspace over its quota");
              },
              usage === undefined ? this.#growthOf(fence.uid, workdirPath, before) : undefined,
              usage,
            )
          : undefined;
      try {
        outcome = { ok: true, value: await body(AbortSignal.any([signal, stop.signal])) };
      } catch (error) {
        outcome = { ok: false, error };
      } finally {
        ended.abort();
        await watch;
      }
      // Stopped by the watch: the command's own result (killed) says less than why.
      if (stop.signal.aborted) outcome = { ok: false, error: stop.signal.reason };
      const finishedAt = new Date().toISOString();
      // Not the run's signal: a cancelled command still records what it changed.
      const after = await this.#scan(
        fence.uid,
        workdirPath,
        AbortSignal.timeout(scanBudget),
        log,
        undefined,
      );
      tree.keepScan(workdirPath, after && { leaseSeq: lease.seq, scan: after });
      // Nothing more happens in the sandbox: the commit and release are fenced writes.
      leave();
      // A command the watch stopped took the UserWorkspace past its quota wherever it wrote
      // (a `workspace` view writes beside the Workdir, which its scans do not see): the next
      // check measures afresh and refuses the next command, not the cached figure.
      const grew = stop.signal.aborted ? undefined : scanGrowth(before, after);
      this.#deps.quota?.settle(fence.uid, grew);
      const changes =
        before === undefined || after === undefined
          ? UNKNOWN_CHANGES
          : diffWorkdirSnapshots(before, after, this.#deps.limits.maxBatchItems);
      const batch: ChangeBatch = {
        batchId: randomUUID(),
        runId: fence.runId,
        rootRunId: tree.rootRunId,
        uid: fence.uid,
        seq: tree.nextSeq(),
        workdirPath,
        tool: info.tool,
        command: batchCommandText(info.command),
        startedAt,
        finishedAt,
        items: changes.items,
        truncated: changes.truncated,
      };
      try {
        await commitChangeBatch(this.#deps.db, batch, { lease });
        released = true;
      } catch (error) {
        await this.#keep(batch, tree, error, log);
      }
      if (!outcome.ok) throw outcome.error;
      return { value: outcome.value, batch };
    } finally {
      if (!released) {
        // Tried again while the run lives (the row would hold its next command back).
        await this.#deps.leases.release(lease, signal).catch((error: unknown) => {
          log.warn({ err: error }, "execution lease release failed; it lapses with the run lease");
        });
      }
    }
  }

  /**
   * At a root run's end: commits the tree's batches kept for repair, if the database is
   * back; returns those still unrepaired (the ending records placeholders for them).
   */
  async settle(tree: TreeBatches, log: Logger): Promise<readonly ChangeBatch[]> {
    for (const batch of tree.unrepaired) {
      try {
        await commitChangeBatch(this.#deps.db, batch, { repaired: true });
        tree.repaired(batch.batchId);
        await this.#deps.repairs.remove(batch.batchId);
      } catch (error) {
        log.warn(
          { err: error, batch_id: batch.batchId },
          "change batch still unrepaired at run end",
        );
      }
    }
    return tree.unrepaired;
  }

  async #keep(batch: ChangeBatch, tree: TreeBatches, cause: unknown, log: Logger): Promise<void> {
    tree.keptForRepair(batch);
    try {
      await this.#deps.repairs.save(batch);
      log.warn(
        { err: cause, batch_id: batch.batchId },
        "change batch commit failed; kept as a repair record for the repair pass",
      );
    } catch (error) {
      // Neither Postgres nor the data root: the facts live only in this process now. The
      // run's ending retries them and, failing that, records the batch as unrepaired.
      log.error(
        { err: error, commit_error: cause, batch_id: batch.batchId },
        "change batch could neither be committed nor kept on disk",
      );
    }
  }

  /**
   * The uid's UserWorkspace usage through incremental peeks of its root (decision 0180):
   * bytes and entries of the whole workspace, whoever wrote them, at the cost of what
   * changed since the last look. Undefined (the watch walks) where there is no peeker, or
   * the first look (a full walk the first time the root is indexed) fails or is truncated.
   */
  async #workspaceLook(
    uid: string,
    signal: AbortSignal,
  ): Promise<((signal: AbortSignal) => Promise<WorkspaceUsage | undefined>) | undefined> {
    const peeker = this.#deps.peeker?.();
    const open = this.#deps.userWorkspaces.openUserWorkspace;
    if (peeker === undefined || open === undefined) return undefined;
    const look = async (s: AbortSignal): Promise<WorkspaceUsage | undefined> => {
      try {
        const workspace = await open(uid, { signal: s });
        try {
          const scan = await workspace.scanMetadata("", this.#deps.limits.scan, {
            signal: s,
            scanner: peeker,
          });
          if (scan.truncated) return undefined; // a link, a FIFO, a bound: the walk counts them
          // The root itself counts as an entry, as measureWorkspaceUsage counts it.
          return { bytes: scanBytes(scan), inodes: scan.files.size + scan.dirs.size + 1 };
        } finally {
          workspace.close();
        }
      } catch {
        return undefined;
      }
    };
    return (await look(signal)) === undefined ? undefined : look;
  }

  /**
   * The running command's growth, looked at through incremental peeks (decision 0163);
   * undefined where scans walk in full or the before-scan is not exact.
   */
  #growthOf(uid: string, workdirPath: string, before: MetadataScan | undefined) {
    const peeker = this.#deps.peeker?.();
    if (peeker === undefined || before === undefined || before.truncated) return undefined;
    return commandGrowth(before, async (signal) => {
      try {
        return await this.#scanWith(peeker, uid, workdirPath, signal);
      } catch {
        return undefined; // this look falls back to a walk of the UserWorkspace
      }
    });
  }

  async #scanWith(
    scanner: MetadataScanner | undefined,
    uid: string,
    workdirPath: string,
    signal: AbortSignal,
  ): Promise<MetadataScan> {
    const workdir = await this.#deps.userWorkspaces.openExistingWorkdir(uid, workdirPath, {
      signal,
    });
    try {
      return await workdir.scanMetadata("", this.#deps.limits.scan, {
        signal,
        ...(scanner === undefined ? {} : { scanner }),
      });
    } finally {
      workdir.close();
    }
  }

  /** Undefined when nothing is known (the run's changes then say truncated). */
  async #scan(
    uid: string,
    workdirPath: string,
    signal: AbortSignal,
    log: Logger,
    runSignal: AbortSignal | undefined,
  ): Promise<MetadataScan | undefined> {
    try {
      return await this.#scanWith(this.#deps.scanner, uid, workdirPath, signal);
    } catch (error) {
      runSignal?.throwIfAborted();
      if (domainReasonOf(error) === "workdir_missing") {
        return { files: new Map(), dirs: new Set([""]), complete: new Set([""]), truncated: false };
      }
      log.warn({ err: error }, "workdir scan failed; this command's changes are unknown");
      return undefined;
    }
  }
}
