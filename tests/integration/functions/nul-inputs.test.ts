import { Writable } from "node:stream";
import { sql } from "drizzle-orm";
import pino from "pino";
import { describe, expect, test } from "vitest";
import {
  loggerOptions,
  WITHHELD_QUERY_MESSAGE,
} from "../../../shared/logging/safe-error-serializer.ts";
import { type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// Hostile-tenant finding: a NUL byte in a title, name, input or uid used to reach
// PostgreSQL (which cannot store it), fail as a 500, and log the SQL with every bound
// value. Now it is a 400 at the edge, nothing is written, and no log line holds values.

const h = functionsHarnessForFile();

async function rows(): Promise<number> {
  const [row] = await h.database.sql<{ n: number }[]>`
    select (select count(*) from projects) + (select count(*) from conversations)
         + (select count(*) from agent_runs) + (select count(*) from tmp_uploads) as n`;
  return Number(row?.n ?? -1);
}

describe("NUL characters at the edge", () => {
  test("in a project name, a thread title, a run input or a nested name: 400, nothing written", async () => {
    const before = await rows();
    const cases: Array<[string, unknown, string]> = [
      ["/v1/projects", { name: "a\u0000b" }, "name"],
      ["/v1/threads", { title: "x\u0000" }, "title"],
      ["/v1/runs", { input: "echo hi\u0000; rm -rf /" }, "input"],
      ["/v1/runs", { input: "ok", title: "\u0000" }, "title"],
      [
        "/v1/attachments/uploads",
        { files: [{ name: "a\u0000.pdf", size: 1, content_type: "application/pdf" }] },
        "files.0.name",
      ],
    ];
    for (const [path, body, field] of cases) {
      const res = await h.call("POST", path, { body });
      expect(res.status, path).toBe(400);
      const { error } = await jsonOf<ErrorJson>(res);
      expect(error).toMatchObject({
        code: "invalid_request",
        details: { field, reason: "nul_character" },
      });
      // The answer does not echo the input either.
      expect(JSON.stringify(error)).not.toContain("rm -rf");
    }
    expect(await rows()).toBe(before);
  });

  test("a token whose uid holds a NUL is a 401 and creates nothing", async () => {
    const before = await rows();
    const res = await h.call("POST", "/v1/threads", { uid: "alice\u0000bob", body: {} });
    expect(res.status).toBe(401);
    expect(await rows()).toBe(before);
  });
});

describe("failed queries in logs", () => {
  test("a query that fails on a bound value logs neither the SQL text nor the value", async () => {
    const lines: string[] = [];
    const logger = pino(
      loggerOptions("info"),
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const secret = "tenant-secret-input";
    // A real failure of the real driver: PostgreSQL refuses the NUL in a text parameter.
    const failure = await h.db
      .execute(sql`select ${`${secret}\u0000`}::text as v from conversations`)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(Error);
    expect(String((failure as Error).message)).toContain(secret); // what drizzle puts there
    logger.error({ err: failure }, "request failed");
    expect(lines).toHaveLength(1);
    const line = lines[0] ?? "";
    expect(line).toContain(WITHHELD_QUERY_MESSAGE);
    expect(line).not.toContain(secret);
    expect(line).not.toContain("from conversations");
  });
});
