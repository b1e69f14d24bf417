import { Registry } from "prom-client";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createAddressGuard } from "../../../agent-host/egress/address-guard.ts";
import { createEgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import { createPostgresEgressAudit } from "../../../agent-host/egress/postgres-egress-audit.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { NO_NETWORK } from "../../../shared/network/network-policy.ts";
import {
  findNetworkCeiling,
  putNetworkOverride,
} from "../../../shared/network/network-policy-store.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { type FakeInternet, startFakeInternet } from "../../support/fake-internet.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { testLogger } from "../../support/test-logger.ts";
import { seedRunningRun } from "../execution-lease/seed-runs.ts";
import { proxyConnect, proxyGet } from "./support/proxy-clients.ts";

// The proxy's audit in Postgres and metrics (decision 0116): one network_requests row per
// connection, keyed to its run and uid, and workcell_egress_connections_total{decision}.

let net: FakeInternet;
let database: TestDatabase;
let db: Db;
let root: DataRoot;

beforeAll(async () => {
  net = await startFakeInternet();
  database = await freshDatabase();
  db = createDb(database.sql);
  root = await freshDataRoot();
  await net.addHosts([
    [net.name("allowed"), net.address],
    [net.name("denied"), net.address],
  ]);
}, 120_000);

afterAll(async () => {
  await net?.close();
  await database?.drop();
  await root?.remove();
});

test("each connection is one row of its run (allowed with bytes, refused with reason) and one count", async () => {
  const run = await seedRunningRun(db, { uid: "alice" });
  await putNetworkOverride(db, "alice", { mode: "allowlist", allow: [net.name("allowed")] });
  const metrics = createWorkcellMetrics(new Registry());
  const proxy = createEgressProxy({
    ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
    guard: createAddressGuard(),
    audit: createPostgresEgressAudit({ db, logger: testLogger(), metrics, timeoutMs: 10_000 }),
  });
  const egress = await proxy.open(
    { uid: "alice", runId: run.runId, sandboxId: "sbx-audit", generation: 1 },
    10_000_000,
    root.path,
  );
  expect((await proxyGet(egress.listenPath, `http://${net.name("allowed")}/a`)).status).toBe(200);
  expect((await proxyConnect(egress.listenPath, `${net.name("denied")}:443`)).status).toBe(403);
  const rows = async () =>
    database.sql<
      { uid: string; host: string; decision: string; reason: string | null; bytes_down: string }[]
    >`select uid, host, decision, reason, bytes_down from network_requests
      where run_id = ${run.runId} order by id`;
  await pollUntil(async () => (await rows()).length === 2, 30_000);
  // A forwarded request's row is written when its connection ends, which may be after the
  // refused tunnel's: found by host, not by order.
  const all = await rows();
  const allowed = all.find((r) => r.host === net.name("allowed"));
  const denied = all.find((r) => r.host === net.name("denied"));
  expect(allowed).toMatchObject({ uid: "alice", host: net.name("allowed"), decision: "allowed" });
  expect(Number(allowed?.bytes_down)).toBeGreaterThan(0);
  expect(denied).toMatchObject({
    host: net.name("denied"),
    decision: "denied",
    reason: "not_in_policy",
  });
  const counts = await metrics.egressConnections.get();
  expect(
    Object.fromEntries(counts.values.map((v) => [String(v.labels.decision), v.value])),
  ).toEqual({ allowed: 1, denied: 1 });
  await proxy.close();
});
