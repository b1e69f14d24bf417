import { describe, expect, test } from "vitest";
import { guardRequest } from "../../../../agent-host/secrets/guard-request.ts";
import {
  createSandboxSecrets,
  type SecretSource,
} from "../../../../agent-host/secrets/sandbox-secrets.ts";

// The swap and the guard of one sandbox's requests (decisions 0132, 0134), over a source
// of the user's secrets as they are now.
const VALUE = "ghp_realvalue_000111222";
const live =
  (hosts: string[], template = "Bearer {value}"): SecretSource =>
  async () => [
    { name: "TOKEN", hosts, header: "Authorization", template, value: async () => VALUE },
  ];
const signal = () => AbortSignal.timeout(5_000);

describe("sandbox secrets", () => {
  test("the template's header gets the value towards a bound host; basic auth too", async () => {
    const secrets = createSandboxSecrets("u", ["TOKEN"], live(["api.example.com"]));
    const p = secrets.placeholders.get("TOKEN") ?? "";
    expect(p).toMatch(/^wcs_[0-9a-f]{40}$/);
    const bare = await secrets.rewrite(
      { host: "api.example.com", port: 443, url: "/", headers: { authorization: p } },
      signal(),
    );
    expect(bare).toMatchObject({ ok: true, headers: { authorization: `Bearer ${VALUE}` } });
    const basic = Buffer.from(`x-access-token:${p}`).toString("base64");
    const git = await secrets.rewrite(
      {
        host: "api.example.com",
        port: 443,
        url: "/r.git",
        headers: { authorization: `Basic ${basic}` },
      },
      signal(),
    );
    expect(git).toMatchObject({
      ok: true,
      headers: {
        authorization: `Basic ${Buffer.from(`x-access-token:${VALUE}`).toString("base64")}`,
      },
    });
  });

  test("towards any other host, in a header, the URL or basic auth: refused, nothing rewritten", async () => {
    const secrets = createSandboxSecrets("u", ["TOKEN"], live(["api.example.com"]));
    const p = secrets.placeholders.get("TOKEN") ?? "";
    const basic = Buffer.from(`me:${p}`).toString("base64");
    for (const request of [
      { url: "/", headers: { "x-leak": p } },
      { url: `/?t=${p}`, headers: {} },
      { url: "/", headers: { authorization: `Basic ${basic}` } },
      // The bound name on another port is another host.
      { url: "/", headers: { authorization: `Bearer ${p}` }, port: 8443, host: "api.example.com" },
    ]) {
      const out = await secrets.rewrite(
        {
          host: request.host ?? "evil.example.net",
          port: request.port ?? 443,
          url: request.url,
          headers: request.headers,
        },
        signal(),
      );
      expect(out).toEqual({ ok: false, reason: "secret_exfiltration", names: ["TOKEN"] });
    }
  });

  test("unknown wcs_ text (another generation's) passes unchanged; secrets that cannot be read refuse with 503", async () => {
    const secrets = createSandboxSecrets("u", ["TOKEN"], live(["api.example.com"]));
    const stale = `wcs_${"0".repeat(40)}`;
    const out = await guardRequest(
      secrets,
      {
        host: "api.example.com",
        port: 443,
        url: "/",
        headers: { authorization: `Bearer ${stale}` },
      },
      signal(),
    );
    expect(out).toMatchObject({ ok: true, headers: { authorization: `Bearer ${stale}` } });
    const down = createSandboxSecrets("u", ["TOKEN"], async () => {
      throw new Error("database down");
    });
    expect(
      await guardRequest(
        down,
        { host: "api.example.com", port: 443, url: "/", headers: {} },
        signal(),
      ),
    ).toEqual({ ok: false, status: 503, reason: "secrets_unavailable" });
  });
});
