import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { deploySettings } from "../../../infra/sst/deploy-settings.ts";
import { EnvError } from "../../../shared/env/env-error.ts";

// sst.config.ts validates the operator's settings before it declares any resource: a
// missing OIDC issuer or data-plane URL fails the deploy with every problem named.

const complete = {
  WORKCELL_OIDC_ISSUER: "https://login.example.com/",
  WORKCELL_OIDC_AUDIENCE: "workcell",
  WORKCELL_OIDC_JWKS_URL: "https://login.example.com/jwks.json",
  WORKCELL_DATA_PLANE_URL: "https://dp.workcell.example.com",
};

describe("deploy settings", () => {
  test("a complete set parses", () => {
    expect(deploySettings(complete)).toMatchObject(complete);
  });

  test("a missing issuer and data-plane URL fail together, each by name, without values", () => {
    const { WORKCELL_OIDC_ISSUER: _i, WORKCELL_DATA_PLANE_URL: _d, ...rest } = complete;
    let error: unknown;
    try {
      deploySettings({ ...rest, WORKCELL_OIDC_JWKS_URL: "" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EnvError);
    const variables = (error as EnvError).problems.map((p) => p.variable).sort();
    expect(variables).toEqual([
      "WORKCELL_DATA_PLANE_URL",
      "WORKCELL_OIDC_ISSUER",
      "WORKCELL_OIDC_JWKS_URL",
    ]);
    expect((error as Error).message).toContain("is not set");
  });

  test("a plain-http data plane is refused (browsers reach it with bearer capabilities)", () => {
    expect(() =>
      deploySettings({ ...complete, WORKCELL_DATA_PLANE_URL: "http://dp.example.com" }),
    ).toThrow(/WORKCELL_DATA_PLANE_URL: must be an https:\/\/ URL/);
  });

  test("sst.config.ts validates before declaring resources and has no empty-string fallbacks", () => {
    const config = readFileSync(new URL("../../../sst.config.ts", import.meta.url), "utf8");
    expect(config.indexOf("deploySettings(process.env)")).toBeGreaterThan(0);
    expect(config.indexOf("deploySettings(process.env)")).toBeLessThan(config.indexOf("new sst."));
    expect(config).not.toMatch(/\?\?\s*""/);
  });
});
