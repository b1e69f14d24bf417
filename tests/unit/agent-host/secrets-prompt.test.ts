import { describe, expect, test } from "vitest";
import { secretsPrompt } from "../../../agent-host/secrets/secrets-prompt.ts";

// The agent's prompt names its secrets and their hosts, never a value or a placeholder.
describe("secrets prompt", () => {
  test("names and hosts only; nothing without secrets or network", () => {
    const text = secretsPrompt({
      secrets: [{ name: "GITHUB_TOKEN", hosts: ["api.github.com", "github.com"] }],
    });
    expect(text).toContain("- $GITHUB_TOKEN: for api.github.com, github.com");
    expect(text).not.toMatch(/wcs_/);
    expect(secretsPrompt({ secrets: [] })).toBeUndefined();
    expect(secretsPrompt(undefined)).toBeUndefined();
  });
});
