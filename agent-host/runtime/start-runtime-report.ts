import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import { recordNodeRuntime } from "../node/record-node-runtime.ts";
import { detectQuotaEnforcement } from "../quota/detect-quota-enforcement.ts";
import type { SandboxTierSet } from "../sandbox/detect-sandbox-tiers.ts";
import { type RuntimeAssetsReport, verifyRuntimeAssets } from "./runtime-assets.ts";

/** Bound on verifying the Runtime Assets (hashing every file, running every probe). */
export const RUNTIME_VERIFY_TIMEOUT_MS = 10 * 60_000;

export type RuntimeReportDeps = {
  db: Db;
  nodeId: string;
  dataRoot: string;
  sandboxTiers: SandboxTierSet;
  logger: Logger;
  /** Whether the node's egress proxy runs (start-node-egress.ts), for the report. */
  egress?: { ready: boolean; detail: string };
  /** How the node copies checkpoints (agent-host/checkpoints/), for the report. */
  checkpoints?: { mode: "reflink" | "copy"; detail: string };
};

export type RuntimeReport = {
  /** The Runtime Assets as verified (never rejects: a failure is a report with `error`). */
  runtime: Promise<RuntimeAssetsReport>;
  /** Aborts the verification and waits for the second write to end. */
  stop(): Promise<void>;
};

/**
 * Verifies every asset's checksums and probe, once per start (docs/architecture.md §3), in the
 * background: a first verification hashes ~300 MB. Until it is done the process tier's
 * bash waits for it; a failure leaves every asset not ready. Meanwhile the runtime report
 * operators read (GET /v1/admin/runtime) gets the tiers and quota mode now (awaited: a
 * failed first write fails the start) and the assets once verified (a failed write is
 * logged, the node runs on).
 */
export async function startRuntimeReport(
  deps: RuntimeReportDeps,
  signal: AbortSignal,
): Promise<RuntimeReport> {
  const { db, nodeId, logger } = deps;
  const stopping = new AbortController();
  const runtime = verifyRuntimeAssets({
    treeDir: deps.sandboxTiers.runtimeDir,
    prober: deps.sandboxTiers.assetProber,
    signal: AbortSignal.any([stopping.signal, AbortSignal.timeout(RUNTIME_VERIFY_TIMEOUT_MS)]),
  }).catch(
    (error: unknown): RuntimeAssetsReport => ({
      version: "unknown",
      assets: [],
      error: (error as Error).message,
    }),
  );
  const stop = async () => {
    stopping.abort();
    await recorded;
  };
  let recorded: Promise<void> = runtime.then(() => {});
  try {
    const tiers = deps.sandboxTiers.statuses.map(({ tier, ready, detail }) => ({
      tier,
      ready,
      detail,
    }));
    const quota = await detectQuotaEnforcement(deps.dataRoot, signal);
    if (quota.mode === "accounting") {
      logger.info({ detail: quota.detail }, "workspace quotas: accounting mode");
    }
    const egress = deps.egress ?? {
      ready: false,
      detail: "not configured on this node: no run gets network",
    };
    const checkpoints = deps.checkpoints;
    const base = { tiers, quota, egress, ...(checkpoints === undefined ? {} : { checkpoints }) };
    await recordNodeRuntime(db, nodeId, base, signal);
    recorded = runtime.then(async (report) => {
      for (const asset of report.assets.filter((a) => !a.ready)) {
        logger.warn({ asset: asset.name, reason: asset.reason }, "runtime asset not ready");
      }
      await recordNodeRuntime(db, nodeId, { ...base, assets: report }, stopping.signal).catch(
        (error: unknown) => {
          if (!stopping.signal.aborted)
            logger.warn({ err: error }, "could not record the Runtime Assets report");
        },
      );
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { runtime, stop };
}
