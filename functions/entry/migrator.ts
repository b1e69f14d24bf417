// The one-off Lambda each deploy invokes before the new API version serves (sst.config.ts:
// an aws.lambda.Invocation the API's configuration depends on). The same migrator as the
// local mode and `workcell migrate` (infra/db/migrate.ts): idempotent, serialized by an
// advisory lock, and it throws on a database newer than this code, which fails the
// invocation and so the deploy, before any new code runs against the wrong schema.
import postgres from "postgres";
import { z } from "zod";
import { type MigrationResult, migrationsFolder } from "../../infra/db/migrate.ts";
import { migrateWithin } from "../../infra/db/migrate-within.ts";
import { postgresUrlVar } from "../../shared/env/env-vars.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import { MIGRATE_BUDGET_MS } from "./lambda-timeouts.ts";

const migratorEnvSchema = z.object({
  DATABASE_URL: postgresUrlVar().describe("Postgres connection URL of the deployment."),
  MIGRATIONS_DIR: z
    .string()
    .regex(/^\//, "must be an absolute path")
    .optional()
    .describe(
      "Absolute folder of the SQL migrations and meta/_journal.json in the bundle (sst.config.ts copies shared/db/migrations there); default: next to the source.",
    ),
});

/** What the deploy records as the invocation's result (and feeds into the API's config). */
export type MigratorResult = MigrationResult & { ok: true };

export async function handler(): Promise<MigratorResult> {
  // Parsed per invocation, not at import: an invocation is one migration, nothing is kept.
  const env = parseEnv(migratorEnvSchema, process.env);
  const sql = postgres(env.DATABASE_URL, { max: 2, connect_timeout: 10, onnotice: () => {} });
  let finished = false;
  try {
    const result = await migrateWithin(sql, MIGRATE_BUDGET_MS, {
      migrationsFolder: env.MIGRATIONS_DIR ?? migrationsFolder,
    });
    finished = true;
    return { ok: true, ...result };
  } finally {
    await sql.end({ timeout: finished ? 5 : 0 });
  }
}
