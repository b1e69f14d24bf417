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
  WORKCELL_DATA_PLANE_CERTIFICATE_ARN:
    "arn:aws:acm:eu-west-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
};

function problemsOf(env: Record<string, string | undefined>): Map<string, string> {
  try {
    deploySettings(env);
  } catch (e) {
    if (!(e instanceof EnvError)) throw e;
    return new Map(e.problems.map((p) => [p.variable, p.message]));
  }
  throw new Error("the settings parsed");
}

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

  test("the node group's settings default to two m7i.large nodes, internet-facing, 10-minute drain", () => {
    expect(deploySettings(complete)).toMatchObject({
      WORKCELL_NODE_INSTANCE_TYPE: "m7i.large",
      WORKCELL_NODE_COUNT: 2,
      WORKCELL_NODE_VOLUME_GB: 100,
      WORKCELL_NODE_DRAIN_MINUTES: 10,
      WORKCELL_DATA_PLANE_SCHEME: "internet-facing",
    });
    expect(deploySettings(complete).WORKCELL_NODE_MAX_COUNT).toBeUndefined();
  });

  test("every bad node-group input is named at once, before anything is created", () => {
    const problems = problemsOf({
      ...complete,
      WORKCELL_DATA_PLANE_CERTIFICATE_ARN: "arn:aws:iam::123456789012:server-certificate/dp",
      WORKCELL_DATA_PLANE_SCHEME: "public",
      WORKCELL_DATA_PLANE_HOSTED_ZONE_ID: "example.com",
      WORKCELL_NODE_INSTANCE_TYPE: "m7i large; rm -rf /",
      WORKCELL_NODE_COUNT: "0",
      WORKCELL_NODE_VOLUME_GB: "8",
      WORKCELL_NODE_DRAIN_MINUTES: "30",
    });
    expect([...problems.keys()].sort()).toEqual([
      "WORKCELL_DATA_PLANE_CERTIFICATE_ARN",
      "WORKCELL_DATA_PLANE_HOSTED_ZONE_ID",
      "WORKCELL_DATA_PLANE_SCHEME",
      "WORKCELL_NODE_COUNT",
      "WORKCELL_NODE_DRAIN_MINUTES",
      "WORKCELL_NODE_INSTANCE_TYPE",
      "WORKCELL_NODE_VOLUME_GB",
    ]);
    expect(problems.get("WORKCELL_DATA_PLANE_CERTIFICATE_ARN")).toMatch(/ACM certificate ARN/);
    expect(problems.get("WORKCELL_NODE_INSTANCE_TYPE")).not.toContain("rm -rf");
  });

  test("the certificate is required and a maximum below the node count is refused", () => {
    const { WORKCELL_DATA_PLANE_CERTIFICATE_ARN: _c, ...rest } = complete;
    expect(problemsOf(rest).get("WORKCELL_DATA_PLANE_CERTIFICATE_ARN")).toMatch(/is not set/);
    const problems = problemsOf({
      ...complete,
      WORKCELL_NODE_COUNT: "4",
      WORKCELL_NODE_MAX_COUNT: "3",
    });
    expect([...problems.keys()]).toEqual(["WORKCELL_NODE_MAX_COUNT"]);
    expect(
      deploySettings({ ...complete, WORKCELL_NODE_COUNT: "3", WORKCELL_NODE_MAX_COUNT: "6" }),
    ).toMatchObject({ WORKCELL_NODE_COUNT: 3, WORKCELL_NODE_MAX_COUNT: 6 });
  });

  test("the nodes' model server: URL and name together, an API key only with them", () => {
    expect(deploySettings(complete).WORKCELL_MODEL_API_KEY).toBe("none");
    const model = {
      WORKCELL_MODEL_BASE_URL: "https://api.openai.com/v1",
      WORKCELL_MODEL_NAME: "gpt-4o-mini",
      WORKCELL_MODEL_API_KEY: "secret",
    };
    expect(deploySettings({ ...complete, ...model })).toMatchObject(model);
    expect([
      ...problemsOf({ ...complete, WORKCELL_MODEL_BASE_URL: model.WORKCELL_MODEL_BASE_URL }).keys(),
    ]).toEqual(["WORKCELL_MODEL_NAME"]);
    expect([...problemsOf({ ...complete, WORKCELL_MODEL_NAME: "gpt-4o-mini" }).keys()]).toEqual([
      "WORKCELL_MODEL_BASE_URL",
    ]);
    expect(
      problemsOf({ ...complete, WORKCELL_MODEL_API_KEY: "secret" }).get("WORKCELL_MODEL_API_KEY"),
    ).toMatch(/no WORKCELL_MODEL_BASE_URL/);
    expect([...problemsOf({ ...complete, WORKCELL_MODEL_API_KEY: "sk-live-123" }).keys()]).toEqual([
      "WORKCELL_MODEL_API_KEY",
    ]);
  });

  test("sst.config.ts validates before declaring resources and has no empty-string fallbacks", () => {
    const config = readFileSync(new URL("../../../sst.config.ts", import.meta.url), "utf8");
    expect(config.indexOf("deploySettings(process.env)")).toBeGreaterThan(0);
    expect(config.indexOf("deploySettings(process.env)")).toBeLessThan(config.indexOf("new sst."));
    expect(config).not.toMatch(/\?\?\s*""/);
  });

  test("the stack's outputs name no secret (the outputs are printed and stored in plain text)", () => {
    const config = readFileSync(new URL("../../../sst.config.ts", import.meta.url), "utf8");
    // run()'s return value: the last `return {` of the file, to the end of run().
    const outputs = config.slice(
      config.lastIndexOf("\n    return {\n"),
      config.lastIndexOf("\n    };\n  },\n});"),
    );
    const names = [...outputs.matchAll(/^ {6}(\w+):/gm)].map((m) => m[1]);
    expect(names.length).toBeGreaterThan(8);
    expect(outputs).not.toMatch(/password|databaseUrl|capability|envFile|Secret|\.value\b/i);
  });
});
