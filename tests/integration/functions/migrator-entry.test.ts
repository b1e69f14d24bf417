import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, expect, test } from "vitest";
import { migrationsFolder } from "../../../infra/db/migrate.ts";
import { knownMigrations } from "../../../infra/db/schema-version.ts";
import { postgresAdminUrl } from "../../support/postgres.ts";

// The deploy's one-off migrator Lambda (functions/entry/migrator.ts) on an empty database,
// reading the migrations from a copy elsewhere, as in the bundle (sst.config.ts copyFiles).

const name = `wc_migrator_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
let copy: string;
const saved = { ...process.env };

beforeAll(async () => {
  const admin = postgres(postgresAdminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  copy = await mkdtemp(join(tmpdir(), "wc-bundle-"));
  await cp(migrationsFolder, join(copy, "migrations"), { recursive: true });
  const url = new URL(postgresAdminUrl());
  url.pathname = `/${name}`;
  process.env.DATABASE_URL = url.toString();
  process.env.MIGRATIONS_DIR = join(copy, "migrations");
});
afterAll(async () => {
  process.env = saved;
  await rm(copy, { recursive: true, force: true });
  const admin = postgres(postgresAdminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
  } finally {
    await admin.end();
  }
});

test("the migrator Lambda applies everything once, then reports nothing to apply", async () => {
  const { handler } = await import("../../../functions/entry/migrator.ts");
  const total = knownMigrations(migrationsFolder).length;
  expect(await handler()).toEqual({ ok: true, applied: total, total });
  expect(await handler()).toEqual({ ok: true, applied: 0, total });
});

test("a missing migrations folder fails the invocation (and so the deploy)", async () => {
  const { handler } = await import("../../../functions/entry/migrator.ts");
  process.env.MIGRATIONS_DIR = join(copy, "absent");
  try {
    await expect(handler()).rejects.toThrow();
  } finally {
    process.env.MIGRATIONS_DIR = join(copy, "migrations");
  }
});
