import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { MAX_PATH_COMPONENT_BYTES, uidDirname } from "../../../shared/paths/index.ts";

// sha256 digests computed outside the code under test (`printf %s … | sha256sum`).
const SHA256_OIDC_TENANT_USER = "6ff29dc86220c52ea1ac285500bec1fd0603a3c572d758b87f4da6f158ebc967";
const SHA256_UID_LOWER_SPOOF = "70fc2bdf778530c2e113cb62b2c00aa3ce7b463b0ea867f3cd1114285b3231ea";
const SHA256_UID_UPPER_SPOOF = "0cf9ba956aeecf8e519e57afda120354d6da392ded71ee2279a644661ab3e4b2";

describe("uidDirname", () => {
  test.each(["alice", "Alice_01", "a-b_c", "0", "-", "_"])("plain uid %j is used as is", (uid) => {
    expect(uidDirname(uid)).toBe(uid);
  });

  test("an OIDC subject like oidc:tenant/user is hashed", () => {
    expect(uidDirname("oidc:tenant/user")).toBe(`uid-${SHA256_OIDC_TENANT_USER}`);
  });

  test.each(["a.b", "a b", "..", ".", "a/b", "user@example.com", "ünï", "a\u0000"])(
    "uid %j with characters outside [A-Za-z0-9_-] is hashed",
    (uid) => {
      expect(uidDirname(uid)).toMatch(/^uid-[0-9a-f]{64}$/);
    },
  );

  test("a 68-character plain uid spelling another uid's hashed dirname is hashed, no collision", () => {
    const victim = "oidc:tenant/user";
    const spoof = `uid-${SHA256_OIDC_TENANT_USER}`;
    expect(spoof).toHaveLength(68);
    expect(spoof).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(uidDirname(spoof)).toBe(`uid-${SHA256_UID_LOWER_SPOOF}`);
    expect(uidDirname(spoof)).not.toBe(uidDirname(victim));
  });

  test("the uid- prefix check ignores case (case-insensitive filesystems)", () => {
    const spoof = `UID-${SHA256_OIDC_TENANT_USER}`;
    expect(uidDirname(spoof)).toBe(`uid-${SHA256_UID_UPPER_SPOOF}`);
    expect(uidDirname("Uid-x")).toMatch(/^uid-[0-9a-f]{64}$/);
  });

  test("a plain uid that cannot be one path component is hashed", () => {
    const max = "a".repeat(MAX_PATH_COMPONENT_BYTES);
    expect(uidDirname(max)).toBe(max);
    expect(uidDirname(`${max}a`)).toMatch(/^uid-[0-9a-f]{64}$/);
  });

  test("rejects an empty uid", () => {
    expect(() => uidDirname("")).toThrow(WorkcellError);
    expect(() => uidDirname("")).toThrow(/must not be empty/);
  });

  test("is injective and always yields one safe path component", () => {
    const uid = fc.oneof(
      fc.string({ minLength: 1 }),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,10}$/),
      fc.stringMatching(/^[0-9a-f]{64}$/).map((hex) => `uid-${hex}`),
    );
    fc.assert(
      fc.property(uid, uid, (a, b) => {
        const da = uidDirname(a);
        expect(da).toMatch(/^[A-Za-z0-9_-]{1,255}$/);
        expect(da).not.toMatch(/^\.\.?$/);
        if (a !== b) expect(da).not.toBe(uidDirname(b));
      }),
    );
  });

  test("is deterministic", () => {
    expect(uidDirname("oidc:tenant/user")).toBe(uidDirname("oidc:tenant/user"));
  });
});
