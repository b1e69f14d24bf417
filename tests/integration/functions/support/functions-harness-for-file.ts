import { afterAll, beforeAll } from "vitest";
import {
  type FunctionsHarness,
  type HarnessOptions,
  startFunctionsHarness,
} from "./functions-harness.ts";

/**
 * One harness for every test of the calling file: started in `beforeAll`, closed in
 * `afterAll`. Call it at the top level of a test file. What it returns stands for the
 * harness once started (its properties are read through to it), so tests and helpers use
 * it as they would the harness; reading it before `beforeAll` has run throws, saying so.
 */
export function functionsHarnessForFile(options: HarnessOptions = {}): FunctionsHarness {
  let started: FunctionsHarness | undefined;
  beforeAll(async () => {
    started = await startFunctionsHarness(options);
  });
  afterAll(async () => {
    await started?.close();
  });
  return new Proxy({} as FunctionsHarness, {
    get(_target, key) {
      if (started === undefined)
        throw new Error(
          `the functions harness is read (${String(key)}) before beforeAll started it: use it inside tests or hooks`,
        );
      const value: unknown = Reflect.get(started, key);
      return typeof value === "function" ? value.bind(started) : value;
    },
  });
}
