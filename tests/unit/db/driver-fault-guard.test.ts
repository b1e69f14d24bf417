import { describe, expect, test } from "vitest";
import { isDatabaseDriverFault } from "../../../shared/db/driver-fault-guard.ts";

const thrownAt = (frames: string[]) => {
  const error = new TypeError("Cannot read properties of null (reading 'write')");
  error.stack = [`${error.name}: ${error.message}`, ...frames.map((f) => `    at ${f}`)].join("\n");
  return error;
};

describe("isDatabaseDriverFault", () => {
  test("an error thrown in postgres.js's own code is the driver's (esm, cjs and cf builds)", () => {
    for (const build of ["src", "cjs/src", "cf/src"]) {
      const error = thrownAt([
        `Immediate.nextWrite (file:///opt/workcell/node_modules/postgres/${build}/connection.js:255:22)`,
        "process.processImmediate (node:internal/timers:574:21)",
      ]);
      expect(isDatabaseDriverFault(error)).toBe(true);
    }
  });

  test("an application callback the driver called is not the driver's fault", () => {
    const error = thrownAt([
      "onRow (file:///opt/workcell/agent-host/runs/run-recorder.ts:10:5)",
      "Socket.data (file:///opt/workcell/node_modules/postgres/src/connection.js:300:7)",
    ]);
    expect(isDatabaseDriverFault(error)).toBe(false);
  });

  test("a package whose name only starts with postgres, and non-errors, are not", () => {
    const other = thrownAt(["x (file:///n/node_modules/postgres-array/src/index.js:1:1)"]);
    expect(isDatabaseDriverFault(other)).toBe(false);
    expect(isDatabaseDriverFault("node_modules/postgres/src/connection.js")).toBe(false);
    expect(isDatabaseDriverFault(undefined)).toBe(false);
  });
});
