import postgres from "postgres";
import { migrate } from "../../infra/db/migrate.ts";

/** Every test database is a cheap copy of this one (CREATE DATABASE … TEMPLATE). */
export const templateDatabaseName = "workcell_template";

export async function prepareTemplateDatabase(adminUrl: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${templateDatabaseName}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${templateDatabaseName}`;
  const sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
  try {
    await migrate(sql);
  } finally {
    // Copies from a template need it to have no open connection.
    await sql.end();
  }
}
