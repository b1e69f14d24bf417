import { HeadBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import postgres from "postgres";
import { DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC } from "../../../shared/capability/capability-limits.ts";
import { migrationsFolder } from "../../db/migrate.ts";
import { knownMigrations } from "../../db/schema-version.ts";
import { type DoctorResult, fail, messageOf, ok, warn, within } from "./doctor-check.ts";

/** Each remote part must answer within this, or it is reported down. */
export const DOCTOR_CALL_TIMEOUT_MS = 10_000;
/** Clock skew beyond which a warning is given (well inside the capability tolerance). */
export const CLOCK_SKEW_WARN_MS = 2_000;

/** Postgres reachable, schema current, and this node's clock against the database's. */
export async function postgresChecks(databaseUrl: string): Promise<DoctorResult[]> {
  const sql = postgres(databaseUrl, {
    max: 1,
    connect_timeout: DOCTOR_CALL_TIMEOUT_MS / 1000,
    onnotice: () => {},
  });
  try {
    let skewMs: number | undefined;
    const reachable = await within("postgres", DOCTOR_CALL_TIMEOUT_MS, async () => {
      const before = Date.now();
      const [row] = await sql<{ now_ms: string; migrations: number | null }[]>`
        select (extract(epoch from clock_timestamp()) * 1000)::bigint::text as now_ms,
          (select count(*)::int from drizzle.__drizzle_migrations
            where to_regclass('drizzle.__drizzle_migrations') is not null) as migrations`.catch(
        async () =>
          sql<{ now_ms: string; migrations: null }[]>`
            select (extract(epoch from clock_timestamp()) * 1000)::bigint::text as now_ms, null as migrations`,
      );
      const after = Date.now();
      // Compare with the midpoint of the round trip: the server read its clock in between.
      skewMs = Number(row?.now_ms) - (before + after) / 2;
      const total = knownMigrations(migrationsFolder).length;
      const applied = row?.migrations ?? 0;
      if (applied < total) {
        return fail(
          "postgres",
          `reachable, but ${applied} of ${total} migrations applied: run \`workcell migrate\``,
        );
      }
      if (applied > total) {
        return fail(
          "postgres",
          `reachable, but the schema is newer than this code (${applied} > ${total}): upgrade this node`,
        );
      }
      return ok("postgres", `reachable; schema current (${total} migrations)`);
    });
    if (skewMs === undefined)
      return [reachable, warn("clock skew", "not measured: Postgres did not answer")];
    const abs = Math.abs(skewMs);
    const limitMs = DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC * 1000;
    const text = `${Math.round(skewMs)} ms against the database's clock`;
    const clock =
      abs > limitMs
        ? fail(
            "clock skew",
            `${text}: beyond the ${limitMs / 1000} s capabilities tolerate; run chrony/systemd-timesyncd`,
          )
        : abs > CLOCK_SKEW_WARN_MS
          ? warn("clock skew", `${text}: enable time synchronisation`)
          : ok("clock skew", text);
    return [reachable, clock];
  } catch (error) {
    return [fail("postgres", messageOf(error)), warn("clock skew", "not measured")];
  } finally {
    await sql.end({ timeout: 0 });
  }
}

export async function sqsCheck(sqs: SQSClient, queueUrl: string): Promise<DoctorResult> {
  return within("sqs run queue", DOCTOR_CALL_TIMEOUT_MS, async (signal) => {
    const out = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ["ApproximateNumberOfMessages"],
      }),
      { abortSignal: signal },
    );
    return ok(
      "sqs run queue",
      `reachable (${out.Attributes?.ApproximateNumberOfMessages ?? "?"} messages waiting)`,
    );
  });
}

export async function s3Check(s3: S3Client, bucket: string): Promise<DoctorResult> {
  return within("s3 attachments bucket", DOCTOR_CALL_TIMEOUT_MS, async (signal) => {
    try {
      await s3.send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal: signal });
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
        ?.httpStatusCode;
      if (status === 404) return fail("s3 attachments bucket", `bucket ${bucket} does not exist`);
      if (status === 403)
        return fail(
          "s3 attachments bucket",
          `access to ${bucket} denied: check the node's IAM role`,
        );
      throw error;
    }
    return ok("s3 attachments bucket", `${bucket} reachable`);
  });
}
