import { existsSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BOB_WORKDIR, type DataPlaneEnv, SECRET, setupDataPlane } from "./harness.ts";
import { rawRequest } from "./raw-request.ts";

// uid A's capability can never read, list, write or delete in uid B's workspace (nor
// anywhere outside A's Workdir), whatever the path says. Requests are sent raw, so the
// client does not normalise anything away. Every answer is checked for leaked bytes, and
// afterEach checks Bob's files and Alice's outside/ are unchanged.

let env: DataPlaneEnv;
let token: string;
beforeEach(async () => {
  env = await setupDataPlane();
  token = await env.token({ ops: ["read", "write", "delete"] });
  writeFileSync(env.at("mine.txt"), "alice's file");
});
afterEach(() => env.finish());

function send(method: string, endpoint: string, rawPathValue: string, body?: string) {
  return rawRequest(
    env.server.url,
    method,
    `${endpoint}?path=${rawPathValue}`,
    {
      Authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "Content-Type": "text/plain" }),
    },
    body,
  );
}

/** Each [method, endpoint, path] is answered 403, and no answer carries a secret. */
async function expectEachForbidden(
  cases: readonly (readonly [string, string, string])[],
): Promise<void> {
  for (const [method, endpoint, path] of cases) {
    const response = await send(
      method,
      endpoint,
      encodeURIComponent(path),
      method === "PUT" ? "x" : undefined,
    );
    expect([method, path, response.status]).toEqual([method, path, 403]);
    expect(response.body).not.toContain("TOP SECRET");
  }
}

/** The raw `path` values an attacker would try; none may reach anything outside. */
function attackPaths(
  bobRelativeFromWorkdir: string,
  bobAbsolute: string,
): readonly [string, number][] {
  return [
    ["..", 403],
    ["/..", 403],
    ["/../..", 403],
    [`/${bobRelativeFromWorkdir}`, 403],
    [`/${bobRelativeFromWorkdir}/secret.txt`, 403],
    ["/%2e%2e", 403],
    ["/%2E%2E/%2e%2e/%2e%2e/%2e%2e/bob/workspace/secret.txt", 403],
    ["/%2e%2e%2f%2e%2e%2fbob", 403],
    ["%2F..%2F..%2F..%2F..%2Fbob", 403],
    ["/.%2e/secret.txt", 403],
    ["/a/../../bob", 403],
    ["\\..\\..\\bob", 403],
    ["/%5c..%5cbob", 403],
    ["file:///etc/passwd", 403],
    ["/x%00/../../bob", 403],
    ["/%00", 403],
    ["/home/gem/user-data", 403],
    ["/home/gem/user-data/../../bob/workspace/secret.txt", 403],
    [`/home/gem/user-data/${BOB_WORKDIR}/secret.txt`, 403],
    ["/home/gem", 403],
    // Not escapes, merely bad or harmless: they resolve inside Alice's Workdir or fail. A
    // host path is just a path inside the Workdir (`<workdir>/tmp/...`), which is missing.
    [encodeURIComponent(bobAbsolute), 404],
    [`/${"%252e%252e"}/secret.txt`, 404],
    ["//secret.txt", 403],
    ["/./secret.txt", 400],
    ["", 400],
    ["relative/secret.txt", 400],
    [`/${"a".repeat(256)}`, 400],
    [`/${"a/".repeat(2100)}a`, 400],
  ];
}

describe("cross-user and escape paths", () => {
  let bobRelative: string;
  let bobAbsoluteSecret: string;
  beforeEach(() => {
    bobRelative = relative(env.workdir, env.bobUserDir);
    bobAbsoluteSecret = join(env.bobUserDir, "workspace", "secret.txt");
  });

  it("list: refused, nothing of Bob's listed", async () => {
    for (const [path, status] of attackPaths(bobRelative, bobAbsoluteSecret)) {
      const response = await send("GET", "/dp/v1/files", path);
      expect([path, response.status]).toEqual([path, status]);
      // Error messages echo the requested path; what must never appear is a listing.
      expect(response.body).not.toContain('"items"');
      expect(response.body).not.toContain("TOP SECRET");
    }
  });

  it("download: refused, no byte of Bob's read", async () => {
    for (const [path, status] of attackPaths(bobRelative, bobAbsoluteSecret)) {
      const response = await send("GET", "/dp/v1/files/content", path);
      expect([path, response.status]).toEqual([path, status]);
      expect(response.body).not.toContain("TOP SECRET");
    }
  });

  it("upload, mkdir, delete: refused, nothing written or removed anywhere outside", async () => {
    for (const [path, status] of attackPaths(bobRelative, bobAbsoluteSecret)) {
      const put = await send("PUT", "/dp/v1/files/content", path, "pwned");
      expect([path, put.status]).toEqual([path, status]);
      const mkdir = await send("POST", "/dp/v1/dirs", path);
      expect(mkdir.status, path).not.toBe(201);
      const del = await send("DELETE", "/dp/v1/files", path);
      expect(del.status, path).not.toBe(204);
    }
    expect(existsSync(env.at("mine.txt"))).toBe(true);
  });

  it("a symlink in Alice's Workdir to Bob's workspace is refused for every operation", async () => {
    symlinkSync(join(env.bobUserDir, "workspace"), env.at("bob"));
    symlinkSync(join(env.bobUserDir, "workspace", "secret.txt"), env.at("bob-secret"));
    await expectEachForbidden([
      ["GET", "/dp/v1/files", "/bob"],
      ["GET", "/dp/v1/files/content", "/bob/secret.txt"],
      ["GET", "/dp/v1/files/content", "/bob-secret"],
      ["PUT", "/dp/v1/files/content", "/bob/new.txt"],
      ["POST", "/dp/v1/dirs", "/bob/newdir"],
      ["DELETE", "/dp/v1/files", "/bob/secret.txt"],
    ]);
  });

  it("Alice's Workdir swapped for a symlink to Bob's Workdir is refused, never followed", async () => {
    const bobsCopy = join(env.bobUserDir, "workspace", BOB_WORKDIR);
    renameSync(env.workdir, `${env.workdir}.moved`);
    symlinkSync(bobsCopy, env.workdir);
    await expectEachForbidden([
      ["GET", "/dp/v1/files", "/"],
      ["GET", "/dp/v1/files/content", "/secret.txt"],
      ["PUT", "/dp/v1/files/content", "/new.txt"],
      ["POST", "/dp/v1/dirs", "/newdir"],
      ["DELETE", "/dp/v1/files", "/secret.txt"],
    ]);
  });

  it("Alice's UserWorkspace swapped for a symlink to Bob's is refused, never followed", async () => {
    const bobWorkspace = join(env.bobUserDir, "workspace");
    renameSync(env.aliceWorkspace, `${env.aliceWorkspace}.moved`);
    symlinkSync(bobWorkspace, env.aliceWorkspace);
    await expectEachForbidden([
      ["GET", "/dp/v1/files", "/"],
      ["GET", "/dp/v1/files/content", "/secret.txt"],
      ["PUT", "/dp/v1/files/content", "/new.txt"],
      ["DELETE", "/dp/v1/files", "/secret.txt"],
    ]);
  });
});

it("SECRET fixture sanity: Bob's secret exists where the attacks aim", async () => {
  const local = await setupDataPlane();
  try {
    expect(existsSync(join(local.bobUserDir, "workspace", "secret.txt"))).toBe(true);
    expect(SECRET).toContain("TOP SECRET");
  } finally {
    await local.cleanup();
  }
});
