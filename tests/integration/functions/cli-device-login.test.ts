import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerType, serve } from "@hono/node-server";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createOidcTokenVerifier } from "../../../functions/auth/oidc-token-verifier.ts";
import type { TokenVerifier } from "../../../functions/auth/token-verifier.ts";
import { runCli } from "../../../sdk/cli/run-cli.ts";
import { type DeviceFlowIssuer, startDeviceFlowIssuer } from "../../support/device-flow-issuer.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// `workcell login --issuer --client-id` (decision 0098): the OIDC device flow against an
// issuer on loopback, the API verifying that issuer's tokens (AUTH_MODE=oidc's verifier),
// the CLI in-process with its own config file: the person is shown a code, the CLI polls
// until they approve, creates a personal access token with the sign-in and stores only that.

let verifier: TokenVerifier | undefined;
const h = functionsHarnessForFile({
  auth: { verify: (token, signal) => (verifier as TokenVerifier).verify(token, signal) },
});
let issuer: DeviceFlowIssuer;
let noDevice: DeviceFlowIssuer;
let server: ServerType;
let api: string;
let home: string;

beforeAll(async () => {
  issuer = await startDeviceFlowIssuer({ audience: "workcell" });
  noDevice = await startDeviceFlowIssuer({ audience: "workcell", device: false });
  verifier = createOidcTokenVerifier({
    issuer: issuer.url,
    audience: "workcell",
    jwksUrl: issuer.jwksUrl,
  });
  server = serve({ fetch: h.app.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  home = await mkdtemp(join(tmpdir(), "workcell-device-login-"));
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await issuer?.close();
  await noDevice?.close();
  await rm(home, { recursive: true, force: true });
});

function cli(args: string[], config: string) {
  const out: string[] = [];
  const err: string[] = [];
  const done = runCli(
    args,
    {
      stdout: (t) => out.push(t),
      stderr: (t) => err.push(t),
      env: { WORKCELL_CONFIG: config },
    },
    AbortSignal.timeout(60_000),
  );
  return { done, out: () => out.join(""), err: () => err.join("") };
}

describe("workcell login with the OIDC device flow", () => {
  test("shows the code, waits for the approval, then stores a PAT for this machine (0600)", async () => {
    const config = join(home, "config.json");
    const login = cli(
      ["login", "--url", api, "--issuer", issuer.url, "--client-id", "workcell-cli"],
      config,
    );
    await pollUntil(async () => login.err().includes("WDJB-MJHT"));
    expect(login.err()).toMatch(
      /Open http:\/\/127\.0\.0\.1:\d+\/activate and enter the code WDJB-MJHT/,
    );
    // Not approved yet: the CLI keeps polling and has stored nothing.
    await pollUntil(async () => issuer.polls() >= 1);
    await expect(stat(config)).rejects.toThrow();
    issuer.approve("dora");
    expect(await login.done).toBe(0);
    expect((await stat(config)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(config, "utf8")) as { token: string };
    expect(stored.token).toMatch(/^wct_/);
    // The stored PAT is dora's, with runs and files, and works.
    const threads = cli(["threads", "--json"], config);
    expect(await threads.done).toBe(0);
    // The API's dev tokens are off here (OIDC verifier): read the table itself.
    const rows = await h.db.execute(sql`select uid, scopes from personal_access_tokens`);
    expect([...rows]).toEqual([{ uid: "dora", scopes: ["runs", "files"] }]);
  });

  test("an issuer without the device flow: a usage error that says what to do, nothing stored", async () => {
    const config = join(home, "none.json");
    const login = cli(
      ["login", "--url", api, "--issuer", noDevice.url, "--client-id", "workcell-cli"],
      config,
    );
    expect(await login.done).toBe(2);
    expect(login.err()).toMatch(/does not offer the device flow: create a personal access token/);
    await expect(stat(config)).rejects.toThrow();
  });
});
