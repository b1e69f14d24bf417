import { type SQL, sql } from "drizzle-orm";

/**
 * A scalar subquery: the version of what `uid`'s skill projection must hold, as text
 * (`<uid's row>:<the TRUNCATE row>`, an absent row as 0). The triggers of migration 0015
 * bump it in every transaction that changes the uid's grants or a granted skill's source,
 * and each bump takes a sequence value no other write ever had, so two equal readings
 * mean that nothing the projection depends on committed in between (decision 0075).
 *
 * Read by the projection refresh under the uid's grant lock (in the statement that reads
 * the grants) and by a run's context load, which compares it to the refresh's.
 */
export function skillGrantVersionSql(uid: string): SQL<string> {
  return sql<string>`(select coalesce((select version from skill_grant_versions where uid = ${uid}), 0)::text
    || ':' || coalesce((select version from skill_grant_versions where uid = ''), 0)::text)`;
}
