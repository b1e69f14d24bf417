import { existsSync, lstatSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../../functions/data-plane/http-data-plane-client.ts";
import { namesIn } from "../workspace/harness.ts";
import {
  ALICE,
  ALICE_WORKDIR,
  type DataPlaneEnv,
  errorOf,
  SANDBOX_OWNER,
  setupDataPlane,
} from "./harness.ts";

// The endpoints functions/ calls server-to-server. `check` is exercised through the real
// functions/ client (http-data-plane-client.ts), so the contract it relies on (path,
// method, bearer capability with op `read`, body {workdir_path}, outcome by status) is
// tested against the real server.

const LINKED = "code/my-project";
const FRESH = "projects/11111111-2222-4333-8444-555555555555";

let env: DataPlaneEnv;
beforeEach(async () => {
  env = await setupDataPlane();
  mkdirSync(join(env.aliceWorkspace, LINKED), { recursive: true });
});
afterEach(() => env.finish());

async function post(
  endpoint: "check" | "materialize",
  workdirPath: string,
  body: unknown = { workdir_path: workdirPath },
  ops: ("check" | "read" | "materialize" | "write")[] = [endpoint],
): Promise<Response> {
  const token = await env.token({ workdirPath, ops });
  return env.request("POST", `/internal/v1/workdirs/${endpoint}`, {
    token,
    body: typeof body === "string" ? body : JSON.stringify(body),
    headers: { "Content-Type": "application/json" },
  });
}

describe("POST /internal/v1/workdirs/check", () => {
  const client = () =>
    createHttpDataPlaneClient({
      baseUrl: env.server.url,
      capabilities: createCapabilityMinter({ privateJwk: env.keys.privateJwk }),
    });
  const check = (path: string) =>
    client().checkExistingWorkdir(ALICE, path, AbortSignal.timeout(5_000));

  it("functions/'s client: ok, not_found, invalid, forbidden", async () => {
    writeFileSync(join(env.aliceWorkspace, "code/a-file"), "x");
    symlinkSync(env.outside, join(env.aliceWorkspace, "code/link"));
    expect(await check(LINKED)).toBe("ok");
    expect(await check(ALICE_WORKDIR)).toBe("ok");
    expect(await check("code/missing")).toBe("not_found");
    expect(await check("code/a-file")).toBe("invalid");
    expect(await check("code/link")).toBe("forbidden");
    expect(await check("code/link/dir")).toBe("forbidden");
    expect(await check(FRESH)).toBe("not_found");
    // A check never creates anything.
    expect(existsSync(join(env.aliceWorkspace, FRESH))).toBe(false);
    expect(existsSync(join(env.aliceWorkspace, "code/missing"))).toBe(false);
  });

  it("answers 200 {ok: true} with op `check` or `read`", async () => {
    for (const ops of [["check"], ["read"]] as const) {
      const response = await post("check", LINKED, undefined, [...ops]);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ ok: true });
    }
  });

  it("a user without a UserWorkspace yet: 404", async () => {
    const token = await env.token({ uid: "carol", workdirPath: LINKED, ops: ["check"] });
    const response = await env.request("POST", "/internal/v1/workdirs/check", {
      token,
      body: JSON.stringify({ workdir_path: LINKED }),
      headers: { "Content-Type": "application/json" },
    });
    expect(await errorOf(response)).toMatchObject({ status: 404, reason: "workdir_missing" });
    expect(existsSync(join(env.dataRoot, "users", "carol"))).toBe(false);
  });

  it("a body naming another Workdir than the capability is 403", async () => {
    const response = await post("check", LINKED, { workdir_path: ALICE_WORKDIR });
    expect(await errorOf(response)).toMatchObject({ status: 403, reason: "capability_scope" });
  });

  it("the same Workdir spelled differently is accepted (compared canonically)", async () => {
    const upper = ALICE_WORKDIR.toUpperCase().replace("PROJECTS", "projects");
    const response = await post("check", ALICE_WORKDIR, { workdir_path: ` ${upper} ` });
    expect(response.status).toBe(200);
  });

  it("a malformed body is 400", async () => {
    for (const body of [
      "not json",
      "{}",
      JSON.stringify({ workdir_path: 42 }),
      JSON.stringify({ workdir_path: "../x" }),
    ]) {
      expect((await post("check", LINKED, body)).status, body).toBe(400);
    }
  });

  it("a body over the JSON limit is 413", async () => {
    const response = await post("check", LINKED, { workdir_path: LINKED, pad: "x".repeat(20_000) });
    expect((await errorOf(response)).status).toBe(413);
  });

  it("`materialize` does not allow a check, nor `write`", async () => {
    for (const ops of [["materialize"], ["write"]] as const) {
      const response = await post("check", LINKED, undefined, [...ops]);
      expect(await errorOf(response)).toMatchObject({
        status: 403,
        reason: "operation_not_granted",
      });
    }
  });
});

describe("POST /internal/v1/workdirs/materialize", () => {
  it("creates a managed Workdir 0700 owned by the sandbox user, idempotently", async () => {
    for (let i = 0; i < 2; i++) {
      const response = await post("materialize", FRESH);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ ok: true, workdir_path: FRESH });
    }
    const st = lstatSync(join(env.aliceWorkspace, FRESH));
    expect(st.isDirectory()).toBe(true);
    expect(st.mode & 0o777).toBe(0o700);
    expect([st.uid, st.gid]).toEqual([SANDBOX_OWNER.uid, SANDBOX_OWNER.gid]);
    // Only the Workdir: uploads/ and outputs/ appear on first use (docs/architecture.md §3).
    expect(namesIn(join(env.aliceWorkspace, FRESH))).toEqual([]);
  });

  it("creates the UserWorkspace of a new user 0700", async () => {
    const token = await env.token({ uid: "carol", workdirPath: FRESH, ops: ["materialize"] });
    const response = await env.request("POST", "/internal/v1/workdirs/materialize", {
      token,
      body: JSON.stringify({ workdir_path: FRESH }),
      headers: { "Content-Type": "application/json" },
    });
    expect(response.status).toBe(200);
    const workspace = join(env.dataRoot, "users", "carol", "workspace");
    expect(lstatSync(workspace).mode & 0o777).toBe(0o700);
    expect(lstatSync(join(workspace, FRESH)).isDirectory()).toBe(true);
  });

  it("a linked Workdir is checked, never created", async () => {
    expect((await post("materialize", LINKED)).status).toBe(200);
    const missing = await post("materialize", "code/missing");
    expect(await errorOf(missing)).toMatchObject({ status: 404, reason: "workdir_missing" });
    expect(existsSync(join(env.aliceWorkspace, "code/missing"))).toBe(false);
  });

  it("a symlinked projects/ or Workdir is 403 and nothing is created behind it", async () => {
    const projects = join(env.aliceWorkspace, "projects");
    renameSync(projects, `${projects}.moved`);
    symlinkSync(env.outside, projects);
    const response = await post("materialize", FRESH);
    expect(await errorOf(response)).toMatchObject({ status: 403, reason: "symlink_refused" });
    expect(namesIn(env.outside)).toEqual(["dir", "secret.txt"]);
  });

  it("needs op `materialize`: write or read is 403", async () => {
    for (const ops of [["write"], ["read"]] as const) {
      const response = await post("materialize", FRESH, undefined, [...ops]);
      expect(await errorOf(response)).toMatchObject({
        status: 403,
        reason: "operation_not_granted",
      });
    }
    expect(existsSync(join(env.aliceWorkspace, FRESH))).toBe(false);
  });

  it("a body naming another Workdir than the capability is 403, nothing created", async () => {
    const response = await post("materialize", FRESH, { workdir_path: ALICE_WORKDIR });
    expect((await errorOf(response)).status).toBe(403);
    expect(existsSync(join(env.aliceWorkspace, FRESH))).toBe(false);
  });
});
