import { createRequire } from "node:module";
import { DrizzleQueryError } from "drizzle-orm/errors";
import type pino from "pino";
import { afterEach, expect, test, vi } from "vitest";
import {
  loggerOptions,
  WITHHELD_QUERY_MESSAGE,
} from "../../../shared/logging/safe-error-serializer.ts";

// docs/decisions/0078: on Workers pino's browser build writes through `console`; with the
// entries' options each line is one JSON string like the Node build's, and failed queries
// are serialized by the safe serializer there too.

/** The build bundlers pick for Cloudflare Workers (pino's `browser` field): what the Worker runs. */
const pinoBrowser = createRequire(import.meta.url)("pino/browser.js") as typeof pino;

afterEach(() => {
  vi.restoreAllMocks();
});

function consoleLines(method: "info" | "error" | "warn"): string[] {
  const lines: string[] = [];
  vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
    lines.push(...args.map(String));
  });
  return lines;
}

test("an info line with a child's bindings is one JSON string with every field", () => {
  const lines = consoleLines("info");
  const logger = pinoBrowser(loggerOptions("info"));
  const child = logger.child({ request_id: "rid-1" });
  child.info({ route: "/v1/runs/{run_id}", status: 404, labels: { a: { b: "deep" } } }, "request");
  child.debug({ hidden: true }, "below the level");
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0] ?? "")).toMatchObject({
    level: 30,
    time: expect.any(Number),
    msg: "request",
    request_id: "rid-1",
    route: "/v1/runs/{run_id}",
    status: 404,
    // Nested objects are kept whole (console objects print `[Object]` past depth 2).
    labels: { a: { b: "deep" } },
  });
});

test("a failed query's SQL text and bound values never reach an error line", () => {
  const lines = consoleLines("error");
  const secret = "tenant-secret-input";
  const failure = new DrizzleQueryError("select $1::text from conversations", [secret], undefined);
  pinoBrowser(loggerOptions("info")).error({ err: failure }, "request failed");
  expect(lines).toHaveLength(1);
  const line = lines[0] ?? "";
  expect(JSON.parse(line)).toMatchObject({
    level: 50,
    msg: "request failed",
    err: { message: WITHHELD_QUERY_MESSAGE },
  });
  expect(line).not.toContain(secret);
  expect(line).not.toContain("from conversations");
});
