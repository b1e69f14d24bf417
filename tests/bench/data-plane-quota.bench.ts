// Issue #13's benchmark: a data-plane write (PUT /dp/v1/files/content, the real app,
// capability checked, safe layer) with UserWorkspace quota enforcement against the same
// app without it, in the same run. The workspace already holds 2,000 files, so each
// measurement (a walk, reused for 5 s: docs/decisions/0017) costs what it would.
// Target: ≤ 1.1.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { createDataPlaneApp } from "../../agent-host/data-plane/index.ts";
import { createAccountingQuota } from "../../agent-host/quota/workspace-quota.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../agent-host/workspace/index.ts";
import { mintCapability } from "../../shared/capability/index.ts";
import { newKeyPair } from "../unit/capability/capability-keys.ts";
import { benchTargets, measure, report } from "./measure.ts";

const UID = "bench";
const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
const WRITES = 200;
const RUNS = 15;
const EXISTING_FILES = 2_000;
const targets = benchTargets("data-plane-quota", [
  { measure: "quota-write", op: "<=", target: 1.1 },
]);
const body = Buffer.alloc(4096, 97);

const root = mkdtempSync(join(tmpdir(), "workcell-bench-quota-"));
try {
  const sys = createLibcSyscalls();
  const userWorkspaces = createUserWorkspaces({
    dataRoot: root,
    sys,
    resolver: createPathResolver(sys),
  });
  (await userWorkspaces.ensureManagedWorkdir(UID, WORKDIR)).close();
  const existing = join(root, "users", UID, "workspace", "existing");
  for (let d = 0; d < EXISTING_FILES / 100; d++) {
    mkdirSync(join(existing, `d${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(existing, `d${d}`, `f${f}`), body);
  }
  const keys = await newKeyPair();
  const logger = pino({ level: "silent" });
  const appWith = (quota: ReturnType<typeof createAccountingQuota> | undefined) =>
    createDataPlaneApp({
      userWorkspaces,
      ...(quota === undefined ? {} : { quota }),
      publicKeys: [keys.publicJwk],
      logger,
    });
  const apps = {
    bare: appWith(undefined),
    quota: appWith(createAccountingQuota({ dataRoot: root })),
  };
  // A fresh capability per round (one signature, the same on both sides): they are short-lived.
  const mint = async () =>
    (
      await mintCapability({
        privateKey: keys.privateJwk,
        uid: UID,
        workdirPath: WORKDIR,
        ops: ["write"],
        quota: { workspace_bytes: 2 ** 40, workspace_inodes: 2 ** 30 },
      })
    ).token;
  let round = 0;
  const writes = (app: (typeof apps)[keyof typeof apps]) => async () => {
    const r = round++;
    const token = await mint();
    for (let i = 0; i < WRITES; i++) {
      const res = await app.request(
        `/dp/v1/files/content?path=${encodeURIComponent(`/w-${r}-${i}.bin`)}`,
        { method: "PUT", headers: { authorization: `Bearer ${token}` }, body },
      );
      if (res.status !== 201) throw new Error(`write answered ${res.status}: ${await res.text()}`);
    }
  };
  // The baseline once more after the quota side: the spread between the two is the noise.
  const baseline = await measure(`PUT × ${WRITES}, no quota (baseline)`, writes(apps.bare), {
    runs: RUNS,
    warmupRuns: 2,
  });
  const enforced = await measure(`PUT × ${WRITES}, quota (5 s cache)`, writes(apps.quota), {
    runs: RUNS,
    warmupRuns: 2,
  });
  const baselineAgain = await measure(
    `PUT × ${WRITES}, no quota (baseline, again)`,
    writes(apps.bare),
    { runs: RUNS, warmupRuns: 0 },
  );
  report(
    `data-plane write of ${body.length} bytes, ${EXISTING_FILES} files already in the workspace (target quota/baseline ≤ 1.1)`,
    baseline,
    [enforced, baselineAgain],
  );
  targets.record("quota-write", enforced.medianMs / baseline.medianMs);
} finally {
  rmSync(root, { recursive: true, force: true });
}
