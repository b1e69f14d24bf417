// Prints vitest's totals as one plain closing line ("tests: N passed, N failed, N skipped")
// so that any reader of the CI log, human or tool, sees the count without knowing
// vitest's own summary format.
import { readFileSync } from "node:fs";

const file = process.argv[2];
if (!file) throw new Error("usage: node scripts/test-summary.ts <vitest-json-report>");
let report: { numPassedTests: number; numFailedTests: number; numPendingTests: number };
try {
  report = JSON.parse(readFileSync(file, "utf8"));
} catch {
  console.log("tests: no vitest report (lint or type-check failed before the tests ran)");
  process.exit(0);
}
console.log(
  `tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests} skipped`,
);
