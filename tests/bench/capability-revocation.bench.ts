// Capability revocation (issue 13, docs/decisions/0051): the cost the thread check adds to
// a data-plane request. A small-file GET through the real data-plane app (app.fetch, so the
// HTTP stack does not drown the difference) with a capability naming a live thread:
// without a revocation point (baseline), with the default cache (a Postgres lookup at most
// once per thread per DEFAULT_ACTIVE_THREAD_TTL_MS), and with no cache (a lookup on every
// request), over the same Postgres, data root and capability.
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exportJWK, generateKeyPair } from "jose";
import { pino } from "pino";
import {
  createDataPlaneApp,
  createThreadRevocations,
  type ThreadRevocations,
} from "../../agent-host/data-plane/index.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../agent-host/workspace/index.ts";
import { importCapabilityPublicKey } from "../../shared/capability/capability-keys.ts";
import { mintCapability } from "../../shared/capability/mint-capability.ts";
import { conversations } from "../../shared/db/schema/conversations.ts";
import { projects } from "../../shared/db/schema/projects.ts";
import { ed25519PublicJwkVar } from "../../shared/env/env-vars.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import { startBenchStack } from "./bench-stack.ts";
import { benchTargets, measure, report } from "./measure.ts";

const UID = "bench-revocation";
const WORKDIR = "code/bench";
const RUNS = 30;
const BATCH = 50;
// No target is set for this bench (decision 0051 states none): it shows the cost.
benchTargets("capability-revocation", [{ measure: "revocation-check", op: "<=", target: 1 }]).skip(
  "revocation-check",
  "informational: no target is set for this bench",
);

const stack = await startBenchStack({ maxConnections: 4 });
const { db, dataRoot } = stack;
try {
  const projectId = randomUUID();
  const threadId = randomUUID();
  await db.insert(projects).values({
    id: projectId,
    uid: UID,
    name: "bench",
    workdirPath: WORKDIR,
    directoryMode: "linked",
  });
  await db.insert(conversations).values({ threadId, uid: UID, projectId, rootThreadId: threadId });
  const workdir = join(dataRoot, "users", uidDirname(UID), "workspace", WORKDIR);
  await mkdir(workdir, { recursive: true });
  await writeFile(join(workdir, "a.txt"), "hello");

  const { privateKey, publicKey } = await generateKeyPair("EdDSA", {
    crv: "Ed25519",
    extractable: true,
  });
  const publicKeys = [
    await importCapabilityPublicKey(
      ed25519PublicJwkVar().parse(JSON.stringify(await exportJWK(publicKey))),
    ),
  ];
  const { token } = await mintCapability({
    privateKey,
    uid: UID,
    workdirPath: WORKDIR,
    ops: ["read"],
    threadId,
    ttlSeconds: 900,
  });
  const sys = createLibcSyscalls();
  const userWorkspaces = createUserWorkspaces({
    dataRoot,
    sys,
    resolver: createPathResolver(sys),
  });
  const appWith = (revocations?: ThreadRevocations) =>
    createDataPlaneApp({
      userWorkspaces,
      publicKeys,
      logger: pino({ level: "silent" }),
      ...(revocations === undefined ? {} : { revocations }),
    });
  const get = (app: ReturnType<typeof appWith>) => async () => {
    const res = await app.fetch(
      new Request("http://dp/dp/v1/files/content?path=/a.txt", {
        headers: { authorization: `Bearer ${token}` },
      }),
    );
    if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
    await res.arrayBuffer();
  };
  const options = { runs: RUNS, batch: BATCH, warmupRuns: 3 };
  const baseline = await measure("GET, no revocation point (baseline)", get(appWith()), options);
  const cached = await measure(
    "GET, revocation check, default cache",
    get(appWith(createThreadRevocations({ db }))),
    options,
  );
  const uncached = await measure(
    "GET, revocation check, a query per request",
    get(appWith(createThreadRevocations({ db, activeTtlMs: 0 }))),
    options,
  );
  report("data-plane GET of a 5-byte file, capability naming a live thread", baseline, [
    cached,
    uncached,
  ]);
} finally {
  await stack.stop();
}
