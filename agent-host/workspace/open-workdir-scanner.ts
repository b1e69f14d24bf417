import type { Logger } from "pino";
import { openFanotifyFeed } from "./fanotify-feed.ts";
import { IncrementalScans } from "./incremental-scans.ts";
import type { MetadataScanner } from "./workspace-fs.ts";

/** A full walk of a followed root at least this often (writes through shared mmap). */
export const FULL_WALK_EVERY_MS = 30_000;
const MAX_ROOTS = 32;
const DRAIN_INTERVAL_MS = 200;

export interface WorkdirScanner {
  /** Undefined when the filesystem cannot be followed: every scan then walks in full. */
  readonly scanner: MetadataScanner | undefined;
  close(): void;
}

/**
 * The Execution Lease's scanner for the Workdirs under `dataRoot`: incremental when the
 * kernel gives a fanotify filesystem mark on it (docs/decisions/0156), else the full walk,
 * with the reason logged once.
 */
export function openWorkdirScanner(dataRoot: string, logger: Logger): WorkdirScanner {
  const opened = openFanotifyFeed(dataRoot);
  if (!opened.ok) {
    logger.info({ reason: opened.reason }, "workdir scans walk in full (no fanotify mark)");
    return { scanner: undefined, close() {} };
  }
  const scans = new IncrementalScans({
    feed: opened.feed,
    fullWalkEveryMs: FULL_WALK_EVERY_MS,
    maxRoots: MAX_ROOTS,
    drainIntervalMs: DRAIN_INTERVAL_MS,
  });
  return {
    scanner: scans.scan,
    close() {
      scans.close();
      opened.feed.close();
    },
  };
}
