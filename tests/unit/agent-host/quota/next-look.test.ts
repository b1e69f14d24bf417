import { describe, expect, it } from "vitest";
import {
  BURST_WRITE_BYTES_PER_SECOND,
  nextLookInMs,
  overrunBoundBytes,
  STOP_MARGIN_MS,
  WATCH_FLOOR_INTERVAL_MS,
  WATCH_MAX_INTERVAL_MS,
} from "../../../../agent-host/quota/command-quota-watch.ts";

// Decision 0189: near the quota a look comes before a writer at the burst rate could pass
// the overrun bound; far from it the watch looks rarely.

const MiB = 1024 * 1024;
const small = { workspace_bytes: 10 * MiB, workspace_inodes: 1_000_000 };
const large = { workspace_bytes: 10 * 1024 * MiB, workspace_inodes: 1_000_000 };
const usage = (bytes: number) => ({ bytes, inodes: 1 });

/** What a writer at the burst rate adds between a look and the stop after the next one. */
const burstBytes = (waitMs: number) =>
  ((waitMs + STOP_MARGIN_MS) / 1000) * BURST_WRITE_BYTES_PER_SECOND;

describe("nextLookInMs", () => {
  it("looks again before a burst from anywhere under a small quota could pass the bound", () => {
    const bound = overrunBoundBytes(small);
    for (const used of [0, 1 * MiB, 5 * MiB, 9.9 * MiB]) {
      const wait = nextLookInMs(small, usage(used), 0.5);
      expect(used + burstBytes(wait)).toBeLessThanOrEqual(small.workspace_bytes + bound);
      // Under the 25 ms the old plan used: a 2.4 GB/s dd passed the bound in it.
      expect(wait).toBeLessThan(25);
    }
  });

  it("looks rarely far from a large quota, and no closer than 25 ms near it", () => {
    expect(nextLookInMs(large, usage(0), 0.5)).toBeGreaterThan(1_000);
    expect(
      nextLookInMs({ ...large, workspace_bytes: 100 * large.workspace_bytes }, usage(0), 0.5),
    ).toBe(WATCH_MAX_INTERVAL_MS);
    // Its bound is 1 GiB: the tight looks are only for quotas whose bound is the floor.
    expect(nextLookInMs(large, usage(large.workspace_bytes - MiB), 0.5)).toBe(25);
  });

  it("never looks closer than the floor, even past the bound's deadline", () => {
    const tight = { workspace_bytes: 64 * MiB, workspace_inodes: 10 };
    expect(nextLookInMs(tight, usage(tight.workspace_bytes), 0)).toBeGreaterThanOrEqual(
      WATCH_FLOOR_INTERVAL_MS,
    );
  });

  it("plans a failed look as one at the quota", () => {
    expect(nextLookInMs(small, undefined, 0.5)).toBe(
      nextLookInMs(small, usage(small.workspace_bytes), 0.5),
    );
  });

  it("lets a slow walk's cost win: at least three walks' time between looks", () => {
    expect(nextLookInMs(small, usage(0), 40)).toBe(120);
  });
});
