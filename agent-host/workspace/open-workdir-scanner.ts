import type { Logger } from "pino";
import { type FanotifyFeed, openFanotifyFeed } from "./fanotify-feed.ts";
import { IncrementalScans } from "./incremental-scans.ts";
import { scanMetadata } from "./metadata-scan.ts";
import type { MetadataScanner } from "./workspace-fs.ts";

/** A full walk of a followed root at least this often (writes through shared mmap). */
export const FULL_WALK_EVERY_MS = 30_000;
const MAX_ROOTS = 32;
const DRAIN_INTERVAL_MS = 200;

export interface WorkdirScanner {
  readonly scanner: MetadataScanner;
  /**
   * The scanner for a look while a command runs (IncrementalScans.peek, decision 0163),
   * or undefined where scans walk in full (no fanotify mark): a look would cost a walk.
   */
  peeker(): MetadataScanner | undefined;
  close(): void;
}

/**
 * The Execution Lease's scanner for the Workdirs under `dataRoot`: incremental when the
 * kernel gives a fanotify filesystem mark on it (docs/decisions/0156), else the full walk,
 * with the reason logged once. The mark is asked for at the first scan, when the data
 * root surely exists (a root's first scan is a full walk either way).
 */
export function openWorkdirScanner(dataRoot: string, logger: Logger): WorkdirScanner {
  let opened: { feed: FanotifyFeed; scans: IncrementalScans } | undefined;
  let tried = false;
  let closed = false;
  const follow = () => {
    if (tried || closed) return opened;
    tried = true;
    const feed = openFanotifyFeed(dataRoot);
    if (!feed.ok) {
      logger.info({ reason: feed.reason }, "workdir scans walk in full (no fanotify mark)");
      return undefined;
    }
    const scans = new IncrementalScans({
      feed: feed.feed,
      fullWalkEveryMs: FULL_WALK_EVERY_MS,
      maxRoots: MAX_ROOTS,
      drainIntervalMs: DRAIN_INTERVAL_MS,
    });
    opened = { feed: feed.feed, scans };
    return opened;
  };
  return {
    scanner: (dirFd, limits, names, signal, onDir) => {
      const following = follow();
      return following === undefined
        ? scanMetadata(dirFd, limits, names, signal, onDir)
        : following.scans.scan(dirFd, limits, names, signal);
    },
    peeker: () => follow()?.scans.peek,
    close() {
      closed = true;
      opened?.scans.close();
      opened?.feed.close();
      opened = undefined;
    },
  };
}
