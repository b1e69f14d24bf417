import { describe, expect, test } from "vitest";
import { WorkcellError } from "../../../shared/errors/index.ts";
import {
  MAX_PATH_COMPONENT_BYTES,
  MAX_WORKDIR_PATH_BYTES,
  normalizeWorkdirPath,
  type WorkdirPathRule,
} from "../../../shared/paths/index.ts";

const UUID = "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";

function rejection(raw: string): WorkcellError {
  try {
    normalizeWorkdirPath(raw);
  } catch (err) {
    if (err instanceof WorkcellError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be rejected`);
}

describe("normalizeWorkdirPath accepts", () => {
  test.each([
    ["code", "code"],
    ["code/app", "code/app"],
    ["  code/app \n", "code/app"],
    ["a/b/c/d", "a/b/c/d"],
    ["...", "..."],
    ["a/..b/c..", "a/..b/c.."],
    [".hidden/x", ".hidden/x"],
    ["über/数据", "über/数据"],
    ["a b/c d", "a b/c d"],
    ["C:/x", "C:/x"],
    ["Projects/manual", "Projects/manual"],
    ["my-projects/x", "my-projects/x"],
  ])("%j → %j", (raw, expected) => {
    expect(normalizeWorkdirPath(raw)).toBe(expected);
  });
});

describe("normalizeWorkdirPath rejects", () => {
  test.each<[string, WorkdirPathRule]>([
    ["", "empty"],
    ["   \t", "empty"],
    ["../x", "dot_component"],
    ["a/../b", "dot_component"],
    ["a/..", "dot_component"],
    ["..", "dot_component"],
    ["./a", "dot_component"],
    ["a/./b", "dot_component"],
    [".", "dot_component"],
    ["/x", "absolute"],
    ["/", "absolute"],
    ["a//b", "empty_component"],
    ["a/", "empty_component"],
    ["a\\b", "backslash"],
    ["..\\x", "backslash"],
    ["https://x/y", "url"],
    ["file:///etc", "url"],
    ["a\u0000b", "nul"],
    ["a\nb", "control_character"],
    ["a\u001bb", "control_character"],
    ["a\u007fb", "control_character"],
    ["a\u0085b", "control_character"],
    ["a\ud800b", "ill_formed_unicode"],
    ["projects/manual", "managed_shape"],
    [`projects/${UUID}/x`, "managed_shape"],
    ["projects", "managed_shape"],
    [`projects/${UUID.slice(0, -1)}`, "managed_shape"],
    [`projects/${UUID}0`, "managed_shape"],
    [`projects/{${UUID}`, "managed_shape"],
    [`projects/urn:uuid:${UUID}`, "managed_shape"],
  ])("%j (%s)", (raw, rule) => {
    const err = rejection(raw);
    expect(err.code).toBe("invalid_request");
    expect(err.details).toEqual({ field: "workdir_path", rule });
    expect(err.message).toMatch(/^workdir_path /);
  });

  test("the message names the rule a user broke", () => {
    expect(rejection("/x").message).toContain("leading '/'");
    expect(rejection("a//b").message).toContain("'//'");
    expect(rejection("../x").message).toContain("'..'");
    expect(rejection("projects/manual").message).toContain("projects/<uuid>");
  });

  test("an absolute path is rejected even when it also contains '..'", () => {
    expect(rejection("/../etc").details?.rule).toBe("absolute");
  });
});

describe("normalizeWorkdirPath byte limits", () => {
  test(`a component of ${MAX_PATH_COMPONENT_BYTES} bytes passes, one more byte fails`, () => {
    const max = "a".repeat(MAX_PATH_COMPONENT_BYTES);
    expect(normalizeWorkdirPath(`x/${max}`)).toBe(`x/${max}`);
    expect(rejection(`x/${max}a`).details?.rule).toBe("component_too_long");
  });

  test("component limits count UTF-8 bytes, not characters", () => {
    // 128 × "é" is 128 characters but 256 bytes.
    expect(rejection("é".repeat(128)).details?.rule).toBe("component_too_long");
    expect(normalizeWorkdirPath("é".repeat(127))).toBe("é".repeat(127));
  });

  test(`a path of ${MAX_WORKDIR_PATH_BYTES} bytes passes, one more byte fails`, () => {
    const component = "b".repeat(99);
    // 41 components of 99 bytes plus 40 slashes is 4099 bytes; trim to exactly the limit.
    const long = Array.from({ length: 41 }, () => component).join("/");
    const exact = long.slice(0, MAX_WORKDIR_PATH_BYTES);
    expect(new TextEncoder().encode(exact).length).toBe(MAX_WORKDIR_PATH_BYTES);
    expect(normalizeWorkdirPath(exact)).toBe(exact);
    expect(rejection(`${exact}b`).details?.rule).toBe("too_long");
  });

  test("total limit counts UTF-8 bytes", () => {
    const multibyte = Array.from({ length: 30 }, () => "界".repeat(50)).join("/");
    expect(multibyte.length).toBeLessThan(MAX_WORKDIR_PATH_BYTES);
    expect(rejection(multibyte).details?.rule).toBe("too_long");
  });
});

describe("normalizeWorkdirPath managed paths", () => {
  test.each([
    [`projects/${UUID}`],
    [`projects/${UUID.toUpperCase()}`],
    [`projects/{${UUID}}`],
    [`projects/{${UUID.toUpperCase()}}`],
    [`projects/${UUID.replaceAll("-", "")}`],
    [`projects/${UUID.replaceAll("-", "").toUpperCase()}`],
    [`projects/{${UUID.replaceAll("-", "")}}`],
    [`  projects/${UUID}  `],
  ])("%j is canonicalised to lowercase hyphenated form", (raw) => {
    expect(normalizeWorkdirPath(raw)).toBe(`projects/${UUID}`);
  });
});
