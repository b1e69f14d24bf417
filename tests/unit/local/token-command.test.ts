import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER } from "../../../infra/local/dev-token.ts";
import { loadOrCreateLocalSecrets } from "../../../infra/local/local-secrets.ts";
import { TOKEN_USAGE, tokenCommand } from "../../../infra/local/token-command.ts";

// Issue 32 (6): `npm run token` reads the same DATA_DIR as the local Workcell and answers
// a user's mistake with usage, never a stack trace, and never creates secrets.

let dataDir: string;
let empty: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "workcell-token-"));
  empty = await mkdtemp(join(tmpdir(), "workcell-token-empty-"));
  await loadOrCreateLocalSecrets(dataDir);
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
  await rm(empty, { recursive: true, force: true });
});

async function verified(token: string | undefined, secretDir: string) {
  const { devJwtSecret } = await loadOrCreateLocalSecrets(secretDir);
  const { payload } = await jwtVerify(token ?? "", new TextEncoder().encode(devJwtSecret), {
    issuer: DEV_TOKEN_ISSUER,
    audience: DEV_TOKEN_AUDIENCE,
  });
  return payload;
}

describe("npm run token", () => {
  test("honours DATA_DIR, as the server does", async () => {
    const out = await tokenCommand(["alice"], { DATA_DIR: dataDir });
    expect(out.code).toBe(0);
    expect((await verified(out.stdout, dataDir)).sub).toBe("alice");
  });

  test("--data-dir wins over DATA_DIR; --admin adds the claim", async () => {
    const out = await tokenCommand(["root", "--admin", "--data-dir", dataDir], {
      DATA_DIR: empty,
    });
    expect(out.code).toBe(0);
    expect(await verified(out.stdout, dataDir)).toMatchObject({ sub: "root", admin: true });
  });

  test("--help prints usage and exits 0", async () => {
    expect(await tokenCommand(["--help"], {})).toEqual({ code: 0, stdout: TOKEN_USAGE });
    expect(await tokenCommand(["-h"], {})).toEqual({ code: 0, stdout: TOKEN_USAGE });
  });

  test("no uid, an unknown option: usage on stderr, exit 2", async () => {
    expect(await tokenCommand([], {})).toEqual({ code: 2, stderr: TOKEN_USAGE });
    const unknown = await tokenCommand(["alice", "--bogus"], {});
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(TOKEN_USAGE);
    expect(unknown.stderr).not.toMatch(/\n\s+at /);
  });

  test("a data dir without secrets says how to start, and creates nothing", async () => {
    const out = await tokenCommand(["alice"], { DATA_DIR: empty });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`No local Workcell data at ${empty}`);
    expect(out.stderr).not.toMatch(/\n\s+at /);
    expect(await readdir(empty)).toEqual([]);
  });
});
