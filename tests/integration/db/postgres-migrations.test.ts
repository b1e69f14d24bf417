import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { migrate, migrationsFolder } from "../../../infra/db/migrate.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { defineSchemaConstraintTests } from "../../unit/db/schema-constraints.ts";
import { one } from "../../unit/db/schema-seed.ts";

// The migrations against a real PostgreSQL (Debian's, as deployed): idempotent, safe
// when several processes migrate one database at once, and enforcing the same
// constraints (schema-constraints.ts).

function adminUrl(): string {
  const provided = (inject("pgAdminUrl") as string | undefined) || process.env.WORKCELL_TEST_PG_URL;
  if (!provided) {
    throw new Error(
      "PostgreSQL is required: no test cluster was provided (vitest inject pgAdminUrl) and " +
        "WORKCELL_TEST_PG_URL is not set; start a cluster and set it to its superuser URL",
    );
  }
  return provided;
}

async function createDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `wc_db_test_${randomBytes(6).toString("hex")}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const dropper = postgres(adminUrl(), { max: 1, onnotice: () => {} });
      try {
        await dropper.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.end();
      }
    },
  };
}

async function journalLength(): Promise<number> {
  const journal = JSON.parse(await readFile(join(migrationsFolder, "meta/_journal.json"), "utf8"));
  return (journal as { entries: unknown[] }).entries.length;
}

async function appliedMigrations(sql: postgres.Sql): Promise<number> {
  const rows = await sql<
    { n: number }[]
  >`select count(*)::int as n from drizzle.__drizzle_migrations`;
  return one(rows).n;
}

async function publicTables(sql: postgres.Sql): Promise<string[]> {
  const rows = await sql<{ table_name: string }[]>`
    select table_name from information_schema.tables
    where table_schema = 'public' order by table_name`;
  return rows.map((r) => r.table_name);
}

const expectedTables = [
  "agent_runs",
  "api_rate_buckets",
  "attachments",
  "change_batch_items",
  "change_batches",
  "checkpoints",
  "conversations",
  "event_stream_slots",
  "execution_lease_roots",
  "execution_leases",
  "idempotency_keys",
  "messages",
  "network_requests",
  "nodes",
  "personal_access_tokens",
  "projects",
  "requests",
  "run_approvals",
  "run_change_sets",
  "run_changes",
  "run_events",
  "sandboxes",
  "skill_grant_versions",
  "skill_grants",
  "skills",
  "tmp_uploads",
  "user_approval_policies",
  "user_limits",
  "user_network_policies",
  "user_secrets",
];

describe("migrations on PostgreSQL", () => {
  let database: Awaited<ReturnType<typeof createDatabase>>;
  let sql: postgres.Sql;
  let db: Db;

  beforeAll(async () => {
    database = await createDatabase();
    sql = postgres(database.url, { max: 4, onnotice: () => {} });
    await migrate(sql);
    db = createDb(sql);
  });

  afterAll(async () => {
    await sql?.end({ timeout: 5 });
    await database?.drop();
  });

  test("migrating twice is idempotent", async () => {
    await migrate(sql);
    expect(await appliedMigrations(sql)).toBe(await journalLength());
    expect(await publicTables(sql)).toEqual(expectedTables);
  });

  test("concurrent migrators from several processes all succeed", async () => {
    const target = await createDatabase();
    // Two child processes plus a multi-connection and a single-connection client in
    // this one, all racing on the same empty database.
    const child = `
      import postgres from "postgres";
      import { migrate } from ${JSON.stringify(join(import.meta.dirname, "../../../infra/db/migrate.ts"))};
      const sql = postgres(process.env.DB_URL, { max: 2, onnotice: () => {} });
      try { await migrate(sql); } finally { await sql.end(); }
    `;
    const run = promisify(execFile);
    const pooled = postgres(target.url, { max: 4, onnotice: () => {} });
    const single = postgres(target.url, { max: 1, onnotice: () => {} });
    const clients = [pooled, single];
    try {
      await Promise.all([
        ...clients.map((client) => migrate(client)),
        ...[1, 2].map(() =>
          run(process.execPath, ["--input-type=module", "-e", child], {
            cwd: join(import.meta.dirname, "../../.."),
            env: { ...process.env, DB_URL: target.url },
          }),
        ),
      ]);
      expect(await appliedMigrations(pooled)).toBe(await journalLength());
      expect(await publicTables(pooled)).toEqual(expectedTables);
      // The lock is released: a later migrator neither blocks nor re-applies.
      await migrate(single);
      expect(await appliedMigrations(pooled)).toBe(await journalLength());
    } finally {
      await Promise.all(clients.map((client) => client.end({ timeout: 5 })));
      await target.drop();
    }
  });

  test("migrating leaves the caller's postgres.js client parsing dates itself", async () => {
    // drizzle() rewires a client's parsers; migrate() must undo that on the caller's client.
    const bare = postgres(database.url, { max: 2, onnotice: () => {} });
    try {
      await migrate(bare);
      const rows = await bare<{ at: unknown }[]>`select now() as at`;
      expect(one(rows).at).toBeInstanceOf(Date);
    } finally {
      await bare.end({ timeout: 5 });
    }
  });

  defineSchemaConstraintTests(() => db);
});
