import { describe, expect, test } from "vitest";
import { DEFAULT_USER_LIMITS } from "../../../shared/limits/user-limits.ts";
import { usageRows, usageState, usedShare } from "../../../web/src/usage/usage-rows.ts";

// The usage page's reading of GET /v1/usage: which state a figure is in against its limit
// (decision 0050: only strictly over stops runs) and how its share reads.

describe("usage rows", () => {
  test("a figure is ok, nearly full from 90%, full at the limit, over only past it", () => {
    expect(usageState(0, 100)).toBe("ok");
    expect(usageState(89, 100)).toBe("ok");
    expect(usageState(90, 100)).toBe("nearly");
    expect(usageState(100, 100)).toBe("full");
    expect(usageState(101, 100)).toBe("over");
    expect(usageState(0, 0)).toBe("full");
    expect(usageState(1, 0)).toBe("over");
  });

  test("the share never reads 0% for something stored, and a zero limit is not a division", () => {
    expect(usedShare(0, 1000)).toBe("0%");
    expect(usedShare(1, 1000)).toBe("<1%");
    expect(usedShare(999, 1000)).toBe("99%");
    expect(usedShare(3000, 1000)).toBe("300%");
    expect(usedShare(0, 0)).toBe("0%");
    expect(usedShare(5, 0)).toBe("over");
  });

  test("every figure of the answer is in a row, against the limit it is held to", () => {
    const rows = usageRows({
      workspace_bytes: 300_000,
      workspace_inodes: 5,
      running_runs: 1,
      queued_runs: 2,
      limits: { ...DEFAULT_USER_LIMITS, workspace_bytes: 100_000, max_concurrent_runs: 1 },
    });
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(byKey.workspace_bytes).toMatchObject({
      used: { value: 300_000 },
      limit: { value: 100_000 },
      state: "over",
    });
    expect(byKey.workspace_inodes).toMatchObject({
      used: { value: 5 },
      limit: { value: DEFAULT_USER_LIMITS.workspace_inodes },
      state: "ok",
    });
    expect(byKey.running_runs).toMatchObject({
      used: { value: 1 },
      limit: { value: 1 },
      state: "full",
    });
    expect(byKey.queued_runs?.used?.value).toBe(2);
    expect(byKey.queued_runs?.limit).toBeUndefined();
    expect(byKey.requests_per_minute?.used).toBeUndefined();
    expect(byKey.requests_per_minute?.limit?.value).toBe(DEFAULT_USER_LIMITS.requests_per_minute);
  });
});
