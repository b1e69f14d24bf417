import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createAddressGuard } from "../../../agent-host/egress/address-guard.ts";
import { containerEgressDir } from "../../../agent-host/egress/container-egress-dir.ts";
import { createEgressProxy, type EgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import {
  createRunEgressOpener,
  egressBytesPerRunOf,
  type RunEgressDeps,
} from "../../../agent-host/egress/run-egress.ts";
import { containerName } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { sandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import {
  findLimitsOverride,
  putLimitsOverride,
} from "../../../functions/limits/user-limits-store.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { domainReasonOf } from "../../../shared/errors/domain-errors.ts";
import { NO_NETWORK } from "../../../shared/network/network-policy.ts";
import {
  findNetworkCeiling,
  putNetworkOverride,
} from "../../../shared/network/network-policy-store.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";

// Which runs get network and where their socket goes (decision 0117), against real
// Postgres policies: none → nothing at all; a container or process sandbox → its place;
// a run that asked where it cannot be given → network_unavailable, never an open network.

let database: TestDatabase;
let db: Db;
let root: DataRoot;
let proxy: EgressProxy;

beforeAll(async () => {
  database = await freshDatabase();
  db = createDb(database.sql);
  root = await freshDataRoot();
  proxy = createEgressProxy({
    ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
    guard: createAddressGuard(),
    audit: () => {},
  });
  await putNetworkOverride(db, "open", { mode: "allowlist", allow: ["pypi.org"] });
});

afterAll(async () => {
  await proxy?.close();
  await database?.drop();
  await root?.remove();
});

const handle = (instanceId: string, sandboxId = "sbxopener0001") =>
  sandboxHandle({
    instanceId,
    sandboxId,
    generation: 3,
    uid: "open",
    runtimeScopeId: "00000000-0000-4000-8000-000000000001",
    workdirPath: "work",
    nodeId: "node-a",
    fileView: "workspace",
  });

function opener(overrides: Partial<RunEgressDeps> = {}) {
  return createRunEgressOpener({
    db,
    logger: silentLogger,
    networkDefault: NO_NETWORK,
    proxy,
    processStateDir: join(root.path, "process"),
    containerEgressRoot: join(root.path, "container-egress"),
    bytesPerRun: 1_000,
    policyTimeoutMs: 5_000,
    ...overrides,
  });
}

const runId = "00000000-0000-4000-8000-0000000000aa";
const signal = () => AbortSignal.timeout(10_000);

describe("run egress opener", () => {
  test("a user without network gets nothing, even when the run asks", async () => {
    const got = await opener()(
      { uid: "closed", runId, agent: { network: { allow: ["pypi.org"] } }, handle: handle("abc") },
      signal(),
    );
    expect(got).toBeUndefined();
  });

  test("a container with its egress directory gets its socket there and the variables point at it", async () => {
    const dir = containerEgressDir(
      join(root.path, "container-egress"),
      containerName("sbxopener0001", 3),
    );
    await mkdir(dir, { recursive: true });
    const got = await opener()({ uid: "open", runId, agent: {}, handle: handle("f00d") }, signal());
    if (got === undefined) throw new Error("no egress");
    const [made] = await readdir(dir);
    expect(got.env.WORKCELL_EGRESS_SOCKET).toBe(`/.workcell/egress/${made}/proxy.sock`);
    expect(got.env.HTTPS_PROXY).toBe("http://127.0.0.1:3128");
    expect(got.hosts).toEqual(["pypi.org"]);
    await got.close();
    expect(await readdir(dir)).toEqual([]);
  });

  test("a run that asked where no socket can be placed fails with network_unavailable; one that did not ask runs without", async () => {
    const noPlace = opener({ containerEgressRoot: undefined });
    const asked = noPlace(
      { uid: "open", runId, agent: { network: { allow: ["pypi.org"] } }, handle: handle("beef") },
      signal(),
    );
    await expect(asked).rejects.toSatisfy(
      (error) => domainReasonOf(error) === "network_unavailable",
    );
    expect(
      await noPlace({ uid: "open", runId, agent: {}, handle: handle("beef") }, signal()),
    ).toBeUndefined();
    const noProxy = opener({ proxy: undefined });
    await expect(
      noProxy(
        {
          uid: "open",
          runId,
          agent: { network: { allow: ["pypi.org"] } },
          handle: handle("process-sbxopener0001-g3"),
        },
        signal(),
      ),
    ).rejects.toSatisfy((error) => domainReasonOf(error) === "network_unavailable");
  });
});

test("a run's byte budget is its user's egress_bytes_per_run: an admin's override, else the default", async () => {
  expect(await egressBytesPerRunOf(db, "budget", 1_000)).toBe(1_000);
  await putLimitsOverride(db, "budget", { egress_bytes_per_run: 5_000 });
  expect(await egressBytesPerRunOf(db, "budget", 1_000)).toBe(5_000);
  expect((await findLimitsOverride(db, "budget")).egress_bytes_per_run).toBe(5_000);
  expect(await egressBytesPerRunOf(db, "other", 1_000)).toBe(1_000);
});
