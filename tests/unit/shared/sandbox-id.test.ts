import { describe, expect, test } from "vitest";
import { SANDBOX_ID_HEX_LENGTH, sandboxId } from "../../../shared/identity/index.ts";
import { uidDirname } from "../../../shared/paths/index.ts";

const SCOPE = "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";

describe("sandboxId", () => {
  test("is the first 12 hex of sha256('<uid>:<runtime_scope_id>')", () => {
    // printf %s 'alice:<scope>' | sha256sum → a877a61aa9c9…
    expect(sandboxId("alice", SCOPE)).toBe("a877a61aa9c9");
    // printf %s 'oidc:tenant/user:<scope>' | sha256sum → 042757056ff5…
    expect(sandboxId("oidc:tenant/user", SCOPE)).toBe("042757056ff5");
    expect(SANDBOX_ID_HEX_LENGTH).toBe(12);
  });

  test("uses the logical uid, not its dirname", () => {
    const uid = "oidc:tenant/user";
    expect(uidDirname(uid)).not.toBe(uid);
    expect(sandboxId(uid, SCOPE)).not.toBe(sandboxId(uidDirname(uid), SCOPE));
  });

  test("differs per runtime scope and per uid", () => {
    const other = "1f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
    expect(sandboxId("alice", SCOPE)).not.toBe(sandboxId("alice", other));
    expect(sandboxId("alice", SCOPE)).not.toBe(sandboxId("bob", SCOPE));
    expect(sandboxId("alice", SCOPE)).toMatch(/^[0-9a-f]{12}$/);
  });

  test("rejects an empty uid, an empty scope, and a scope with ':' (ambiguous input)", () => {
    expect(() => sandboxId("", SCOPE)).toThrow(/uid/);
    expect(() => sandboxId("alice", "")).toThrow(/runtime_scope_id/);
    // Without this rule ("a", "b:c") and ("a:b", "c") would hash the same string.
    expect(() => sandboxId("a", "b:c")).toThrow(/runtime_scope_id/);
    expect(sandboxId("a:b", "c")).toMatch(/^[0-9a-f]{12}$/);
  });
});
