import { availableParallelism } from "node:os";
import { describe, expect, test } from "vitest";
import {
  nodeShareNanoCpus,
  sandboxConfigSchema,
} from "../../../agent-host/sandbox/sandbox-config.ts";

describe("per-sandbox CPUs default to the node's share", () => {
  test.each([
    [2, 4, 500_000_000],
    [16, 4, 4_000_000_000],
    [8, 1, 8_000_000_000],
    [1, 32, 100_000_000], // never below a tenth of a CPU
  ])("%i CPUs / %i slots → %i nano-CPUs", (cpus, slots, expected) => {
    expect(nodeShareNanoCpus(cpus, slots)).toBe(expected);
  });

  test("the config's default is this machine's CPUs over the default 4 run slots", () => {
    const config = sandboxConfigSchema.parse({ image: "x" });
    expect(config.nanoCpus).toBe(nodeShareNanoCpus(availableParallelism(), 4));
    expect(config.nanoCpus).toBeLessThan(availableParallelism() * 1_000_000_000);
  });
});
