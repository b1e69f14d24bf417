import { describe, expect, test } from "vitest";
import {
  hostPatternSchema,
  parseHostPattern,
  patternAllows,
} from "../../../../shared/network/host-pattern.ts";
import {
  defaultPolicyFromEnv,
  NO_NETWORK,
  networkPolicySchema,
  patternsOutside,
  policyAllows,
} from "../../../../shared/network/network-policy.ts";

const allow = (...patterns: string[]) => ({ mode: "allowlist", allow: patterns }) as const;

describe("host patterns", () => {
  test("names, wildcards and ports parse; IP literals, CIDRs and junk are refused", () => {
    expect(parseHostPattern("pypi.org")).toEqual({
      domain: "pypi.org",
      wildcard: false,
      ports: [80, 443],
    });
    expect(parseHostPattern("*.github.com:8443")).toEqual({
      domain: "github.com",
      wildcard: true,
      ports: [8443],
    });
    for (const bad of [
      "10.0.0.1",
      "127.0.0.1:80",
      "10.0.0.0/8",
      "[::1]",
      "::1",
      "*",
      "*.com.",
      "a..b",
      "-a.com",
      "a.com:0",
      "a.com:65536",
      "a.com:080",
      "*.*.a.com",
      "a.com/path",
      "user@a.com",
      "",
    ]) {
      expect(parseHostPattern(bad), bad).toBeUndefined();
      expect(hostPatternSchema.safeParse(bad).success, bad).toBe(false);
    }
    expect(hostPatternSchema.parse(" PyPI.org ")).toBe("pypi.org");
  });

  test("a wildcard matches any depth of subdomain, never the domain itself; ports 80/443 unless named", () => {
    const wildcard = parseHostPattern("*.github.com");
    if (wildcard === undefined) throw new Error("parse");
    expect(patternAllows(wildcard, "api.github.com", 443)).toBe(true);
    expect(patternAllows(wildcard, "a.b.github.com", 80)).toBe(true);
    expect(patternAllows(wildcard, "github.com", 443)).toBe(false);
    expect(patternAllows(wildcard, "evilgithub.com", 443)).toBe(false);
    expect(patternAllows(wildcard, "api.github.com", 22)).toBe(false);
    expect(policyAllows(allow("example.com:8443"), "EXAMPLE.com.", 8443)).toBe(true);
    expect(policyAllows(allow("example.com:8443"), "example.com", 443)).toBe(false);
    expect(policyAllows(NO_NETWORK, "example.com", 443)).toBe(false);
  });

  test("a run's patterns must be covered by its ceiling: narrowing only", () => {
    const ceiling = allow("pypi.org", "*.github.com", "example.com:8443");
    expect(patternsOutside(ceiling, ["pypi.org", "api.github.com", "*.x.github.com"])).toEqual([]);
    expect(
      patternsOutside(ceiling, ["github.com", "*.github.com:22", "example.com", "pypi.org:8080"]),
    ).toEqual(["github.com", "*.github.com:22", "example.com", "pypi.org:8080"]);
    expect(patternsOutside(NO_NETWORK, ["pypi.org"])).toEqual(["pypi.org"]);
  });

  test("policy bodies and the deployment default", () => {
    expect(networkPolicySchema.safeParse({ mode: "allowlist", allow: [] }).success).toBe(false);
    expect(networkPolicySchema.safeParse({ mode: "none" }).success).toBe(true);
    expect(networkPolicySchema.safeParse({ mode: "open" }).success).toBe(false);
    expect(defaultPolicyFromEnv(undefined)).toEqual(NO_NETWORK);
    expect(defaultPolicyFromEnv(" , ")).toEqual(NO_NETWORK);
    expect(defaultPolicyFromEnv("PyPI.org, *.github.com")).toEqual(
      allow("pypi.org", "*.github.com"),
    );
    expect(() => defaultPolicyFromEnv("pypi.org,10.0.0.0/8")).toThrow(/10\.0\.0\.0\/8/);
  });
});
