import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../../functions/data-plane/http-data-plane-client.ts";
import { mintServiceCapability } from "../../../shared/capability/index.ts";
import type { ServiceCapabilityOp } from "../../../shared/capability/service-capability-ops.ts";
import { newKeyPair } from "../../unit/capability/capability-keys.ts";
import { ALICE, BOB, type DataPlaneEnv, errorOf, setupDataPlane } from "./harness.ts";

// POST /internal/v1/usage, the data plane's answer to GET /v1/usage (docs/decisions/0049):
// through functions/'s real client against the real server, and as an attacker would call it.

let env: DataPlaneEnv;
beforeEach(async () => {
  // 0: every read measures again, so a file written behind the data plane's back (as a
  // sandbox does) is seen at once and the figures can be compared exactly.
  env = await setupDataPlane({ quotaMaxUsageAgeMs: 0 });
});
afterEach(() => env.finish());

const client = () =>
  createHttpDataPlaneClient({
    baseUrl: env.server.url,
    capabilities: createCapabilityMinter({ privateJwk: env.keys.privateJwk }),
  });
const usageOf = (uid: string) => client().workspaceUsage(uid, AbortSignal.timeout(10_000));

async function post(token: string | null, body: unknown): Promise<Response> {
  return env.request("POST", "/internal/v1/usage", {
    token,
    body: JSON.stringify(body),
    headers: { "Content-Type": "application/json" },
  });
}

async function serviceToken(uid: string, ops: ServiceCapabilityOp[] = ["workspace.usage"]) {
  return (await mintServiceCapability({ privateKey: env.keys.privateJwk, uid, ops })).token;
}

describe("POST /internal/v1/usage", () => {
  it("counts the bytes and inodes of the files in the UserWorkspace, links not followed", async () => {
    const before = await usageOf(ALICE);
    const dir = join(env.aliceWorkspace, "usage-test");
    mkdirSync(join(dir, "nested"), { recursive: true });
    writeFileSync(join(dir, "a.bin"), Buffer.alloc(1_000, 1));
    writeFileSync(join(dir, "nested", "b.bin"), Buffer.alloc(25_000, 2));
    writeFileSync(join(dir, "empty"), "");
    // A link to a large tree outside the workspace is one inode and no bytes.
    symlinkSync(env.outside, join(dir, "link"));
    const after = await usageOf(ALICE);
    expect(after.workspaceBytes - before.workspaceBytes).toBe(26_000);
    // usage-test, nested, a.bin, b.bin, empty, link
    expect(after.workspaceInodes - before.workspaceInodes).toBe(6);
  });

  it("one user's files never count for another", async () => {
    const bobBefore = await usageOf(BOB);
    writeFileSync(join(env.aliceWorkspace, "big.bin"), Buffer.alloc(50_000));
    expect(await usageOf(BOB)).toEqual(bobBefore);
    expect((await usageOf(ALICE)).workspaceBytes).toBeGreaterThanOrEqual(50_000);
  });

  it("a user without a UserWorkspace yet has 0 bytes and 0 inodes", async () => {
    expect(await usageOf("carol")).toEqual({ workspaceBytes: 0, workspaceInodes: 0 });
  });

  it("a capability for Bob cannot read Alice's usage: 403 capability_scope, no figures", async () => {
    const res = await post(await serviceToken(BOB), { uid: ALICE });
    expect(await errorOf(res.clone())).toMatchObject({ status: 403, reason: "capability_scope" });
    expect(JSON.stringify(await res.json())).not.toContain("workspace_bytes");
  });

  it("another service op, a Workdir capability, a foreign key or no token: refused", async () => {
    const personal = await post(await serviceToken(ALICE, ["skills.personal"]), { uid: ALICE });
    expect(await errorOf(personal)).toMatchObject({
      status: 403,
      reason: "operation_not_granted",
    });
    const workdir = await post(await env.token({ ops: ["read"] }), { uid: ALICE });
    expect(await errorOf(workdir)).toMatchObject({ status: 403, reason: "operation_not_granted" });
    const stranger = await newKeyPair();
    const forged = await mintServiceCapability({
      privateKey: stranger.privateJwk,
      uid: ALICE,
      ops: ["workspace.usage"],
    });
    expect((await post(forged.token, { uid: ALICE })).status).toBe(401);
    expect((await post(null, { uid: ALICE })).status).toBe(401);
    const bad = await post(await serviceToken(ALICE), { user: ALICE });
    expect(bad.status).toBe(400);
  });

  it("functions/' client with a key the data plane does not hold: internal, key pair named", async () => {
    const stranger = await newKeyPair();
    const wrongKey = createHttpDataPlaneClient({
      baseUrl: env.server.url,
      capabilities: createCapabilityMinter({ privateJwk: stranger.privateJwk }),
    });
    await expect(wrongKey.workspaceUsage(ALICE, AbortSignal.timeout(10_000))).rejects.toMatchObject(
      { code: "internal", message: expect.stringContaining("not a pair") },
    );
  });
});
