import { defineConfig } from "drizzle-kit";

// `npm run db:generate` (drizzle-kit generate) diffs shared/db/schema.ts against the last
// snapshot in shared/db/migrations/meta and writes the next SQL migration there. The
// migrations are applied by infra/db/migrate.ts, never by drizzle-kit push.
export default defineConfig({
  dialect: "postgresql",
  schema: "./shared/db/schema.ts",
  out: "./shared/db/migrations",
});
