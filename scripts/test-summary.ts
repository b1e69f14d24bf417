// Prints vitest's totals as one plain closing line ("tests: N passed, N failed, N skipped")
// so that any reader of the CI log, human or tool, sees the count without knowing
// vitest's own summary format. A skipped or todo test fails the run (docs/testing.md: a test
// that cannot get a part it needs fails loudly, it is never silently skipped); `.only`
// is refused by vitest itself (`allowOnly: false` in vitest.config.ts).
import { readFileSync } from "node:fs";

interface AssertionResult {
  readonly fullName: string;
  readonly status: string;
}

interface VitestJsonReport {
  readonly numPassedTests: number;
  readonly numFailedTests: number;
  readonly numPendingTests: number;
  readonly numTodoTests?: number;
  readonly testResults?: readonly {
    readonly name: string;
    readonly assertionResults?: readonly AssertionResult[];
  }[];
}

const file = process.argv[2];
if (!file) throw new Error("usage: node scripts/test-summary.ts <vitest-json-report>");
let report: VitestJsonReport;
try {
  report = JSON.parse(readFileSync(file, "utf8"));
} catch {
  console.log("tests: no vitest report (lint or type-check failed before the tests ran)");
  process.exit(0);
}
const notRun = (report.testResults ?? []).flatMap((suite) =>
  (suite.assertionResults ?? [])
    .filter((test) => test.status !== "passed" && test.status !== "failed")
    .map((test) => `${suite.name}: ${test.fullName} (${test.status})`),
);
const skipped = report.numPendingTests + (report.numTodoTests ?? 0);
console.log(
  `tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped`,
);
if (skipped > 0 || notRun.length > 0) {
  for (const line of notRun) console.log(`  not run: ${line}`);
  console.log(
    "tests: skipped or todo tests fail the run: make them pass, or delete them if they test nothing.",
  );
  process.exit(1);
}
