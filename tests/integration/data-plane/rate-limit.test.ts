import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDb } from "../../../shared/db/client.ts";
import { userLimits } from "../../../shared/db/schema/user-limits.ts";
import { createRequestRateLimiter } from "../../../shared/limits/request-rate-limiter.ts";
import { DEFAULT_USER_LIMITS } from "../../../shared/limits/user-limits.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import {
  ALL_OPS,
  BOB,
  BOB_WORKDIR,
  type DataPlaneEnv,
  errorOf,
  q,
  setupDataPlane,
} from "./harness.ts";

// Issue 37 item 8: the data plane answered 60 of 60 requests of a user limited to 20 per
// minute. It now takes each /dp/v1 request from the same Postgres bucket as the API
// (requests_per_minute, docs/decisions/0037), after the capability and before any route.

let database: TestDatabase;
let env: DataPlaneEnv;
const RPM = 20;

beforeAll(async () => {
  database = await freshDatabase();
  const db = createDb(database.sql);
  await db.insert(userLimits).values({ uid: "alice", requestsPerMinute: RPM });
  env = await setupDataPlane({
    rateLimiter: createRequestRateLimiter({
      db,
      defaultRequestsPerMinute: DEFAULT_USER_LIMITS.requests_per_minute,
    }),
  });
});
afterAll(async () => {
  await env?.finish();
  await database?.drop();
});

describe("data plane: requests_per_minute", () => {
  test("a user past their limit gets 429 with Retry-After, a refused write writes nothing, and another user is unaffected", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++)
      statuses.push((await env.request("GET", `/dp/v1/files?${q("/")}`)).status);
    const ok = statuses.filter((s) => s === 200).length;
    // The bucket holds RPM; refill during the burst adds at most a token or two.
    expect(ok).toBeGreaterThanOrEqual(RPM);
    expect(ok).toBeLessThanOrEqual(RPM + 2);
    expect(statuses.filter((s) => s === 429).length).toBe(60 - ok);

    const refused = await env.request("PUT", `/dp/v1/files/content?${q("/planted.txt")}`, {
      body: "should not land",
    });
    expect(await errorOf(refused.clone())).toMatchObject({
      status: 429,
      code: "rate_limited",
      reason: "requests_per_minute",
    });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60 / RPM);
    expect(existsSync(env.at("planted.txt"))).toBe(false);

    // Bob (the default limit) reads his own Workdir meanwhile.
    const bob = await env.token({ uid: BOB, workdirPath: BOB_WORKDIR, ops: ALL_OPS });
    const bobs = await env.request("GET", `/dp/v1/files?${q("/")}`, { token: bob });
    expect(bobs.status).toBe(200);
    // The same bucket as the API's: Alice's row is there, drained.
    const [row] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from api_rate_buckets where uid = 'alice'`;
    expect(row?.n).toBe(1);
  });
});
