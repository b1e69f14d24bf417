import { defineConfig } from "vitest/config";

// Three projects (docs/testing.md): `unit` is pure logic; `integration` and `e2e` use the
// real parts that tests/setup/global-setup.ts boots once per run (PostgreSQL cluster,
// dockerd + the sandbox test image, fauxqs). Each test isolates itself cheaply: a fresh
// database cloned from a migrated template, a fresh queue name, a fresh data root.
// `.only` fails the run everywhere, not just where CI is set (the default): a focused
// test left in would silently skip the rest. scripts/test-summary.ts fails on skips.
const allowOnly = false;

export default defineConfig({
  test: {
    allowOnly,
    projects: [
      {
        test: {
          name: "unit",
          allowOnly,
          include: ["tests/unit/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "integration",
          allowOnly,
          include: ["tests/integration/**/*.test.ts"],
          globalSetup: ["tests/setup/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "e2e",
          allowOnly,
          include: ["tests/e2e/**/*.test.ts"],
          globalSetup: ["tests/setup/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
