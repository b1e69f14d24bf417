import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { decodeJwt } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CapabilityOp } from "../../../shared/capability/index.ts";
import { newKeyPair } from "../../unit/capability/capability-keys.ts";
import { namesIn } from "../workspace/harness.ts";
import {
  ALICE_WORKDIR,
  BOB,
  BOB_WORKDIR,
  type DataPlaneEnv,
  errorOf,
  q,
  type RequestBody,
  SECRET,
  setupDataPlane,
} from "./harness.ts";

// The capability is the only authorization (docs/architecture.md §1). Each refusal is checked
// on every endpoint, and after each one nothing was read (no bytes in the answer) and
// nothing was written (the Workdir and everything outside it are unchanged).

let env: DataPlaneEnv;
beforeEach(async () => {
  env = await setupDataPlane();
  writeFileSync(env.at("existing.txt"), SECRET);
});
afterEach(() => env.finish());

interface Call {
  readonly name: string;
  readonly op: CapabilityOp;
  readonly method: string;
  readonly url: string;
  readonly body?: () => RequestBody;
  readonly headers?: Record<string, string>;
}

function batchBody(): FormData {
  const form = new FormData();
  form.append("file", new Blob(["pwned"]), "batch.txt");
  return form;
}

const CALLS: readonly Call[] = [
  { name: "list", op: "read", method: "GET", url: `/dp/v1/files?${q("/")}` },
  {
    name: "download",
    op: "read",
    method: "GET",
    url: `/dp/v1/files/content?${q("/existing.txt")}`,
  },
  {
    name: "upload",
    op: "write",
    method: "PUT",
    url: `/dp/v1/files/content?${q("/new.txt")}`,
    body: () => "pwned",
  },
  {
    name: "batch",
    op: "write",
    method: "POST",
    url: `/dp/v1/files/batch?${q("/")}`,
    body: batchBody,
  },
  { name: "mkdir", op: "write", method: "POST", url: `/dp/v1/dirs?${q("/newdir")}` },
  { name: "delete", op: "delete", method: "DELETE", url: `/dp/v1/files?${q("/existing.txt")}` },
  {
    name: "check",
    op: "check",
    method: "POST",
    url: "/internal/v1/workdirs/check",
    body: () => JSON.stringify({ workdir_path: ALICE_WORKDIR }),
    headers: { "Content-Type": "application/json" },
  },
  {
    name: "materialize",
    op: "materialize",
    method: "POST",
    url: "/internal/v1/workdirs/materialize",
    body: () => JSON.stringify({ workdir_path: ALICE_WORKDIR }),
    headers: { "Content-Type": "application/json" },
  },
];

async function call(c: Call, token: string | null): Promise<Response> {
  return env.request(c.method, c.url, {
    token,
    ...(c.body === undefined ? {} : { body: c.body() }),
    ...(c.headers === undefined ? {} : { headers: c.headers }),
  });
}

/** Nothing changed in Alice's Workdir either, and no new Workdir appeared. */
function assertNothingWritten(): void {
  expect(namesIn(env.workdir)).toEqual(["existing.txt"]);
  expect(readFileSync(env.at("existing.txt"), "utf8")).toBe(SECRET);
  expect(namesIn(`${env.aliceWorkspace}/projects`)).toEqual([
    "0b9f7a1e-1b2c-4d3e-8f90-123456789abc",
  ]);
}

async function expectRefusal(response: Response, status: number, code: string): Promise<void> {
  const text = await response.text();
  expect(response.status).toBe(status);
  expect(JSON.parse(text).error.code).toBe(code);
  expect(text).not.toContain("TOP SECRET");
  if (status === 401) {
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer realm=/);
  }
}

describe.each(CALLS)("$name ($method $url)", (c) => {
  it("without a token: 401", async () => {
    await expectRefusal(await call(c, null), 401, "unauthenticated");
    assertNothingWritten();
  });

  it("with garbage or another scheme: 401", async () => {
    for (const header of ["Bearer", "Bearer not-a-jwt", "Basic YWxpY2U6c2VjcmV0", "Bearer a.b.c"]) {
      const response = await env.request(c.method, c.url, {
        token: null,
        headers: { ...c.headers, Authorization: header },
        ...(c.body === undefined ? {} : { body: c.body() }),
      });
      await expectRefusal(response, 401, "unauthenticated");
    }
    assertNothingWritten();
  });

  it("with an expired token: 401 that says so", async () => {
    const token = await env.token({
      ops: [c.op],
      ttlSeconds: 60,
      now: () => new Date(Date.now() - 120_000),
    });
    const response = await call(c, token);
    const text = await response.text();
    expect(response.status).toBe(401);
    expect(JSON.parse(text).error.details).toEqual({ reason: "capability_expired" });
    assertNothingWritten();
  });

  it("with a wrong audience: 401", async () => {
    const token = await env.token({ ops: [c.op], audience: "some-other-data-plane" });
    await expectRefusal(await call(c, token), 401, "unauthenticated");
    assertNothingWritten();
  });

  it("signed by another key: 401", async () => {
    const other = await newKeyPair();
    const token = await env.token({ ops: [c.op], privateKey: other.privateJwk });
    await expectRefusal(await call(c, token), 401, "unauthenticated");
    assertNothingWritten();
  });

  it("with the payload changed to another uid (a forged capability): 401", async () => {
    const token = await env.token({ ops: [c.op] });
    const [header, , signature] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ ...decodeJwt(token), uid: BOB })).toString(
      "base64url",
    );
    await expectRefusal(await call(c, `${header}.${forged}.${signature}`), 401, "unauthenticated");
    assertNothingWritten();
  });

  it("without the op: 403", async () => {
    const others: CapabilityOp[] = (
      ["read", "write", "delete", "check", "materialize", "import"] as const
    ).filter((op) => op !== c.op && !(c.op === "check" && op === "read"));
    const token = await env.token({ ops: others });
    const response = await call(c, token);
    expect(await errorOf(response.clone())).toMatchObject({ reason: "operation_not_granted" });
    await expectRefusal(response, 403, "forbidden");
    assertNothingWritten();
  });
});

describe("scope", () => {
  it("a token for Bob's Workdir path still opens Alice's workspace: Bob's files are never reached", async () => {
    // The uid selects the UserWorkspace, the path only a directory inside it: naming Bob's
    // Workdir in Alice's capability names a directory Alice does not have.
    const token = await env.token({ workdirPath: BOB_WORKDIR, ops: ["read", "delete"] });
    const list = await env.request("GET", `/dp/v1/files?${q("/")}`, { token });
    expect(await list.json()).toEqual({ items: [], truncated: false });
    const read = await env.request("GET", `/dp/v1/files/content?${q("/secret.txt")}`, { token });
    expect(await errorOf(read)).toMatchObject({ status: 404 });
    const del = await env.request("DELETE", `/dp/v1/files?${q("/secret.txt")}`, { token });
    expect(del.status).toBe(404);
    expect(existsSync(`${env.aliceWorkspace}/${BOB_WORKDIR}`)).toBe(false);
  });

  it("Alice's project id inside Bob's workspace is Bob's: Alice's token reads only her copy", async () => {
    writeFileSync(env.at("secret.txt"), "alice's own");
    const response = await env.request("GET", `/dp/v1/files/content?${q("/secret.txt")}`);
    expect(await response.text()).toBe("alice's own");
  });

  it("Bob's token for the same Workdir path opens Bob's copy, never Alice's", async () => {
    const token = await env.token({ uid: BOB, workdirPath: ALICE_WORKDIR, ops: ["read"] });
    const mine = await env.request("GET", `/dp/v1/files/content?${q("/secret.txt")}`, { token });
    expect(await mine.text()).toBe(SECRET);
    const hers = await env.request("GET", `/dp/v1/files/content?${q("/existing.txt")}`, { token });
    expect(hers.status).toBe(404);
  });
});
