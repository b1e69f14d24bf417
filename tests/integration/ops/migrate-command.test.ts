import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { migrate, migrationsFolder } from "../../../infra/db/migrate.ts";
import { knownMigrations } from "../../../infra/db/schema-version.ts";
import { runOpsCommand } from "../../../infra/ops/ops-cli.ts";
import { captureIo } from "../../support/ops-io.ts";
import { postgresAdminUrl } from "../../support/postgres.ts";

// `workcell migrate` against a real, empty PostgreSQL database (not the migrated template),
// through the command entry the launcher calls.

let name: string;
let url: string;
let sql: postgres.Sql;

beforeEach(async () => {
  name = `wc_migrate_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const admin = postgres(postgresAdminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(postgresAdminUrl());
  u.pathname = `/${name}`;
  url = u.toString();
  sql = postgres(url, { max: 1, onnotice: () => {} });
});
afterEach(async () => {
  await sql.end({ timeout: 5 });
  const admin = postgres(postgresAdminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
  } finally {
    await admin.end();
  }
});

const appliedRows = async () =>
  sql<{ hash: string; created_at: string }[]>`
    select hash, created_at::text as created_at from drizzle.__drizzle_migrations order by id`;
const tables = async () =>
  (
    await sql<{ t: string }[]>`
      select table_name as t from information_schema.tables
      where table_schema = 'public' order by 1`
  ).map((r) => r.t);

describe("workcell migrate", () => {
  test("on an empty database applies everything, then a second run applies nothing", async () => {
    const total = knownMigrations(migrationsFolder).length;
    const first = captureIo();
    expect(await runOpsCommand(["migrate", "--database-url", url], first)).toBe(0);
    expect(first.out()).toBe(
      `migrate: applied ${total} of ${total} migrations; database is current\n`,
    );
    expect(await appliedRows()).toHaveLength(total);
    const tablesAfterFirst = await tables();
    expect(tablesAfterFirst).toContain("agent_runs");

    // DATABASE_URL is the default, as in an agent-host's env file.
    const second = captureIo({ DATABASE_URL: url });
    expect(await runOpsCommand(["migrate"], second)).toBe(0);
    expect(second.out()).toBe(
      `migrate: database is current (${total} migrations, none to apply)\n`,
    );
    expect(await appliedRows()).toHaveLength(total);
    expect(await tables()).toEqual(tablesAfterFirst);
  });

  test("refuses a database migrated by newer code and changes nothing", async () => {
    // A "newer release": this code's migrations plus one more, applied by the same migrator.
    const newer = await mkdtemp(join(tmpdir(), "wc-newer-migrations-"));
    try {
      await cp(migrationsFolder, newer, { recursive: true });
      const journalPath = join(newer, "meta/_journal.json");
      const journal = JSON.parse(await readFile(journalPath, "utf8")) as {
        entries: Array<{
          idx: number;
          version: string;
          when: number;
          tag: string;
          breakpoints: boolean;
        }>;
      };
      const last = journal.entries.at(-1);
      if (last === undefined) throw new Error("empty journal");
      journal.entries.push({
        ...last,
        idx: last.idx + 1,
        when: last.when + 1000,
        tag: "9999_future",
      });
      await writeFile(journalPath, JSON.stringify(journal));
      await writeFile(join(newer, "9999_future.sql"), "CREATE TABLE future_things (id int);");
      await migrate(sql, { migrationsFolder: newer });
    } finally {
      await rm(newer, { recursive: true, force: true });
    }
    const rowsBefore = await appliedRows();
    const tablesBefore = await tables();

    const io = captureIo();
    expect(await runOpsCommand(["migrate", "--database-url", url], io)).toBe(1);
    expect(io.err()).toMatch(
      /^migrate: refused: The database has 1 migration\(s\) this code does not know/,
    );
    expect(io.err()).toContain("deploy that release");
    expect(io.err()).not.toContain(url);
    expect(await appliedRows()).toEqual(rowsBefore);
    expect(await tables()).toEqual(tablesBefore);
    expect(tablesBefore).toContain("future_things");
  });

  test("an unreachable server fails with exit 1 and names no password", async () => {
    const io = captureIo();
    const down = "postgres://workcell:s3cret@127.0.0.1:1/workcell";
    expect(await runOpsCommand(["migrate", "--database-url", down], io)).toBe(1);
    expect(io.err()).toMatch(/^migrate: failed: /);
    expect(io.err()).not.toContain("s3cret");
  });

  test("usage mistakes exit 2 without touching any database", async () => {
    const none = captureIo();
    expect(await runOpsCommand(["migrate"], none)).toBe(2);
    expect(none.err()).toContain("pass --database-url or set DATABASE_URL");
    const bad = captureIo();
    expect(await runOpsCommand(["migrate", "--database-url", "mysql://x:pw@h/db"], bad)).toBe(2);
    expect(bad.err()).not.toContain("pw@");
    const unknown = captureIo();
    expect(await runOpsCommand(["migrate", "--force"], unknown)).toBe(2);
    expect(await sql`select to_regclass('drizzle.__drizzle_migrations') as t`).toEqual([
      { t: null },
    ]);
  });
});
