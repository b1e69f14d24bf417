import { exportJWK, generateKeyPair } from "jose";
import { describe, expect, test } from "vitest";
import { createApp } from "../../../functions/app.ts";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../../functions/data-plane/http-data-plane-client.ts";
import type { FilesAccessResponse } from "../../../shared/contracts/files-access.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import type { Usage } from "../../../shared/contracts/usage.ts";
import { nodes } from "../../../shared/db/schema.ts";
import { ed25519PrivateJwkVar } from "../../../shared/env/env-vars.ts";
import { DEFAULT_USER_LIMITS } from "../../../shared/limits/user-limits.ts";
import { claimParkedRun } from "../../support/claim-parked-run.ts";
import { startSilentServer } from "../../support/silent-server.ts";
import { ALICE, BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// GET /v1/usage (docs/api.md "Limits and usage", docs/decisions/0049) through the whole app:
// bytes and inodes from the real data plane over a real data root, runs from Postgres.

const h = functionsHarnessForFile();

async function usage(uid: string): Promise<Usage> {
  const res = await h.call("GET", "/v1/usage", { uid });
  expect(res.status).toBe(200);
  return jsonOf<Usage>(res);
}

/** A write capability for a new thread of `uid`, from files/access as a client gets it. */
async function writeGrant(uid: string): Promise<FilesAccessResponse> {
  const thread = await jsonOf<Thread>(await h.call("POST", "/v1/threads", { body: {}, uid }));
  return jsonOf<FilesAccessResponse>(
    await h.call("POST", `/v1/threads/${thread.thread_id}/files/access`, {
      body: { ops: ["write"] },
      uid,
    }),
  );
}

/** Creates `dirs`, then writes each file of `files` (path → size) through the data plane. */
async function writeThroughDataPlane(
  grant: FilesAccessResponse,
  files: Record<string, number>,
  dirs: string[] = [],
) {
  const headers = { authorization: `Bearer ${grant.token}` };
  for (const dir of dirs) {
    const made = await fetch(`${grant.base_url}/dp/v1/dirs?path=${encodeURIComponent(dir)}`, {
      method: "POST",
      headers,
    });
    expect(made.status).toBe(201);
  }
  for (const [path, size] of Object.entries(files)) {
    const put = await fetch(
      `${grant.base_url}/dp/v1/files/content?path=${encodeURIComponent(path)}`,
      { method: "PUT", headers, body: Buffer.alloc(size, 7) },
    );
    expect(put.status).toBe(201);
  }
}

async function submitRun(uid: string): Promise<Run> {
  const res = await h.call("POST", "/v1/runs", { body: { input: "true" }, uid });
  expect(res.status).toBe(202);
  return (await jsonOf<{ run: Run }>(res)).run;
}

describe("GET /v1/usage", () => {
  test("bytes and inodes follow the files written through the data plane; Bob's do not move", async () => {
    const aliceBefore = await usage(ALICE);
    const bobBefore = await usage(BOB);
    // The thread's Workdir is created by its first write (materialized on demand): measure
    // from after it exists, so the difference is exactly what the test writes.
    const grant = await writeGrant(ALICE);
    await writeThroughDataPlane(grant, { "/seed.txt": 3 });
    const seeded = await usage(ALICE);
    expect(seeded.workspace_bytes).toBe(aliceBefore.workspace_bytes + 3);
    expect(seeded.workspace_inodes).toBeGreaterThan(aliceBefore.workspace_inodes + 1);

    await writeThroughDataPlane(
      grant,
      { "/a.bin": 1_234, "/reports/b.bin": 40_000, "/reports/deep/c.bin": 5 },
      ["/reports", "/reports/deep"],
    );
    const after = await usage(ALICE);
    expect(after.workspace_bytes - seeded.workspace_bytes).toBe(41_239);
    // 2 directories and 3 files.
    expect(after.workspace_inodes - seeded.workspace_inodes).toBe(5);

    expect(await usage(BOB)).toEqual(bobBefore);
  });

  test("a new user has an empty workspace, no runs and the deployment's default limits", async () => {
    expect(await usage("usage-newcomer")).toEqual({
      workspace_bytes: 0,
      workspace_inodes: 0,
      running_runs: 0,
      queued_runs: 0,
      limits: DEFAULT_USER_LIMITS,
    });
  });

  test("queued and running runs are the caller's real runs; another user's do not count", async () => {
    const uid = "usage-runner";
    const first = await submitRun(uid);
    const second = await submitRun(uid);
    await submitRun(uid);
    await submitRun(BOB);
    expect(await usage(uid)).toMatchObject({ running_runs: 0, queued_runs: 3 });

    // A run worker claims one (the agent-host's own claim), the caller cancels another.
    const nodeId = `usage-node-${crypto.randomUUID()}`;
    await h.db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
    const claim = await claimParkedRun(h.db, { runId: first.run_id, nodeId, leaseTtlMs: 60_000 });
    expect(claim.ok).toBe(true);
    expect((await h.call("POST", `/v1/runs/${second.run_id}/cancel`, { uid })).status).toBe(202);
    expect(await usage(uid)).toMatchObject({ running_runs: 1, queued_runs: 1 });

    const bob = await usage(BOB);
    expect(bob.running_runs).toBe(0);
    expect(bob.queued_runs).toBeGreaterThanOrEqual(1);
  });

  test("an admin's override shows in `limits`; fields left out stay the defaults", async () => {
    const uid = "usage-limited";
    const put = await h.call("PUT", `/v1/admin/users/${uid}/limits`, {
      uid: "ops",
      admin: true,
      body: { workspace_bytes: 5_000_000, max_concurrent_runs: 2 },
    });
    expect(put.status).toBe(200);
    expect((await usage(uid)).limits).toEqual({
      ...DEFAULT_USER_LIMITS,
      workspace_bytes: 5_000_000,
      max_concurrent_runs: 2,
    });
    // Nobody else's limits moved.
    expect((await usage(BOB)).limits).toEqual(DEFAULT_USER_LIMITS);
  });

  test("without a token: 401, and nothing about anyone", async () => {
    const res = await h.call("GET", "/v1/usage", { uid: null });
    expect(res.status).toBe(401);
    const body = await jsonOf<ErrorJson>(res);
    expect(body.error.code).toBe("unauthenticated");
    expect(JSON.stringify(body)).not.toContain("workspace_bytes");
  });

  test("a data plane that never answers: 503 unavailable within the call's timeout", async () => {
    const silent = await startSilentServer();
    try {
      const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
      const privateJwk = ed25519PrivateJwkVar().parse(JSON.stringify(await exportJWK(privateKey)));
      const app = createApp({
        ...h.deps,
        dataPlane: createHttpDataPlaneClient({
          baseUrl: silent.url,
          capabilities: createCapabilityMinter({ privateJwk }),
          timeoutMs: 300,
        }),
      });
      const res = await app.request("/v1/usage", {
        headers: { authorization: `Bearer ${await h.token(ALICE)}` },
      });
      expect(res.status).toBe(503);
      const body = await jsonOf<ErrorJson>(res);
      expect(body.error).toMatchObject({ code: "unavailable" });
      expect(body.error.message).toContain("did not answer in time");
      expect(silent.accepted()).toBe(1);
    } finally {
      await silent.close();
    }
  });
});
