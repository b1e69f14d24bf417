import { describe, expect, test } from "vitest";
import { leaseRootKey, rootsOverlap } from "../../../agent-host/runs/execution-lease/lease-root.ts";

describe("Execution Lease roots", () => {
  test("equal roots and ancestors overlap; siblings and name prefixes do not", () => {
    expect(rootsOverlap("projects/a", "projects/a")).toBe(true);
    expect(rootsOverlap("projects", "projects/a/b")).toBe(true);
    expect(rootsOverlap("projects/a/b", "projects")).toBe(true);
    expect(rootsOverlap("", "projects/a")).toBe(true);
    expect(rootsOverlap("projects/a", "projects/ab")).toBe(false);
    expect(rootsOverlap("projects/a", "projects/b")).toBe(false);
  });
  test("the key makes ancestry a prefix test", () => {
    expect(leaseRootKey("")).toBe("/");
    expect(leaseRootKey("projects/a")).toBe("/projects/a/");
  });
});
