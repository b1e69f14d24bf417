import { expect, test } from "vitest";
import { LOCAL_CONSOLE_CONFIG } from "../../../infra/local/console/console-config.ts";
import { consoleConfigSchema } from "../../../shared/contracts/console-config.ts";

// One schema for /config.json: what the local server writes is what the SPA accepts.

test("the local Workcell's /config.json is a valid console config", () => {
  expect(consoleConfigSchema.parse(LOCAL_CONSOLE_CONFIG)).toEqual(LOCAL_CONSOLE_CONFIG);
});

test("an OIDC config (as sst.config.ts writes it) gets the default scope", () => {
  const parsed = consoleConfigSchema.parse({
    mode: "oidc",
    api_base_url: "https://api.example.com",
    oidc: { authority: "https://issuer.example.com", client_id: "console" },
  });
  expect(parsed).toMatchObject({ mode: "oidc", oidc: { scope: "openid profile" } });
});

test("a malformed config is refused, naming the field", () => {
  for (const bad of [
    { mode: "local", api_base_url: null },
    { mode: "oidc", api_base_url: null, oidc: { authority: "not a url", client_id: "c" } },
    { mode: "production", api_base_url: null },
  ]) {
    const result = consoleConfigSchema.safeParse(bad);
    expect(result.success, JSON.stringify(bad)).toBe(false);
  }
  const missing = consoleConfigSchema.safeParse({ mode: "local", api_base_url: null });
  expect(missing.error?.issues[0]?.path).toEqual(["dev_token_url"]);
});
