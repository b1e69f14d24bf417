import { sql } from "drizzle-orm";
import { Hono } from "hono";
import type postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AppEnv } from "../../../functions/app-env.ts";
import { errorHandler } from "../../../functions/middleware/error-handler.ts";
import { createDb } from "../../../shared/db/client.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { proxiedPostgres } from "../../support/proxied-postgres.ts";

// Issue 38: a request whose database connection goes away answers 503 `unavailable`
// (database_unavailable: it may or may not have been applied, retry with the same
// Idempotency-Key), never a bare 500. The errors are the real driver's, through a proxy
// that cuts the connection; an error the database itself answered (a syntax error) is
// still a failure of ours, 500 `internal`.

let database: TestDatabase;
let proxy: PausableProxy;
let client: postgres.Sql;
let app: Hono<AppEnv>;

beforeAll(async () => {
  database = await freshDatabase();
  ({ proxy, client } = await proxiedPostgres(database.url, {}, 1));
  const db = createDb(client);
  app = new Hono<AppEnv>();
  app.onError(errorHandler());
  app.get("/select", async (c) => {
    await db.execute(sql`select 1`);
    return c.json({ ok: true });
  });
  app.get("/broken", async (c) => {
    await db.execute(sql`selec 1`);
    return c.json({ ok: true });
  });
});

afterAll(async () => {
  proxy.resume();
  await client.end({ timeout: 1 }).catch(() => {});
  await proxy.close();
  await database.drop();
});

it("answers 503 database_unavailable while the connection is cut, and 200 once it is back", async () => {
  expect((await app.request("/select")).status).toBe(200);
  proxy.cut();
  const refused = await app.request("/select");
  expect(refused.status).toBe(503);
  const body = (await refused.json()) as {
    error: { code: string; message: string; details: unknown };
  };
  expect(body.error.code).toBe("unavailable");
  expect(body.error.details).toMatchObject({ reason: "database_unavailable" });
  expect(body.error.message).toContain("may or may not have been applied");
  proxy.resume();
  expect((await app.request("/select")).status).toBe(200);
});

it("an error the database answered is not taken for an outage: 500 internal", async () => {
  const answer = await app.request("/broken");
  expect(answer.status).toBe(500);
  expect(((await answer.json()) as { error: { code: string } }).error.code).toBe("internal");
});
