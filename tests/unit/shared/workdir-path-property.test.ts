import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { normalizeWorkdirPath } from "../../../shared/paths/index.ts";

const ROOT = "/root/ws";

/**
 * Lexical POSIX resolution of `path` against `root`, as `path.posix.resolve` does it:
 * an absolute path restarts at `/`, `.` and empty components vanish, `..` pops (never
 * above `/`). Written here so the property does not trust the code under test.
 */
function resolvePosix(root: string, path: string): string {
  const stack: string[] = [];
  const whole = path.startsWith("/") ? path : `${root}/${path}`;
  for (const part of whole.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") stack.pop();
    else stack.push(part);
  }
  return `/${stack.join("/")}`;
}

function isStrictlyInside(root: string, resolved: string): boolean {
  return resolved.startsWith(`${root}/`) && resolved.length > root.length + 1;
}

function tryNormalize(raw: string): string | undefined {
  try {
    return normalizeWorkdirPath(raw);
  } catch (err) {
    if (err instanceof WorkcellError && err.code === "invalid_request") return undefined;
    throw err;
  }
}

// Segments chosen to hit every rule: dot components, separators of both kinds, URL
// schemes, NUL, whitespace that trim may or may not remove, and the managed prefix.
const hostileSegment = fc.constantFrom(
  ".",
  "..",
  "...",
  "",
  "/",
  "//",
  "\\",
  "..\\",
  "://",
  "\u0000",
  " ",
  "\t",
  "\n",
  "projects",
  "a",
  "b.",
  ".c",
  "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d",
  "{0F8FD04E-1C8B-4C4B-9A4E-6F2D3B1A0C9D}",
);
const biasedPath = fc
  .array(fc.oneof(hostileSegment, fc.string({ maxLength: 4 })), { maxLength: 12 })
  .map((parts) => parts.join(""));
const slashJoinedPath = fc
  .array(fc.oneof(hostileSegment, fc.string({ maxLength: 3 })), { minLength: 1, maxLength: 8 })
  .map((parts) => parts.join("/"));
// Managed-looking paths in every accepted uuid spelling, with hostile prefixes/suffixes.
const uuidSpelling = fc
  .tuple(fc.uuid(), fc.constantFrom("plain", "upper", "braces", "compact", "broken"))
  .map(([uuid, form]) => {
    if (form === "upper") return uuid.toUpperCase();
    if (form === "braces") return `{${uuid}}`;
    if (form === "compact") return uuid.replaceAll("-", "");
    if (form === "broken") return uuid.slice(1);
    return uuid;
  });
const managedishPath = fc
  .tuple(
    fc.constantFrom("", " ", "./", "../", "/"),
    fc.constantFrom("projects/", "projects//", "projects/./"),
    uuidSpelling,
    fc.constantFrom("", "/", "/x", "/..", "\\..", " "),
  )
  .map((parts) => parts.join(""));
const anyPath = fc.oneof(
  biasedPath,
  slashJoinedPath,
  managedishPath,
  fc.string(),
  fc.string({ unit: "grapheme" }),
);

describe("normalizeWorkdirPath properties", () => {
  test("the test resolver itself behaves like POSIX resolution", () => {
    expect(resolvePosix(ROOT, "a/../..")).toBe("/root");
    expect(resolvePosix(ROOT, "a//./b/")).toBe("/root/ws/a/b");
    expect(resolvePosix(ROOT, "/etc")).toBe("/etc");
    expect(resolvePosix(ROOT, "")).toBe(ROOT);
    expect(isStrictlyInside(ROOT, "/root/ws")).toBe(false);
    expect(isStrictlyInside(ROOT, "/root/wsx")).toBe(false);
    expect(isStrictlyInside(ROOT, "/root/ws/a")).toBe(true);
  });

  test("every accepted path resolves strictly inside the root, verbatim", () => {
    fc.assert(
      fc.property(anyPath, (raw) => {
        const normalized = tryNormalize(raw);
        if (normalized === undefined) return;
        const resolved = resolvePosix(ROOT, normalized);
        expect(isStrictlyInside(ROOT, resolved)).toBe(true);
        // Lexical resolution must not rewrite it: what the check saw is what is opened.
        expect(resolved).toBe(`${ROOT}/${normalized}`);
        for (const forbidden of ["\\", "\u0000", "://"])
          expect(normalized).not.toContain(forbidden);
      }),
      { numRuns: 5000 },
    );
  });

  test("normalisation is idempotent", () => {
    fc.assert(
      fc.property(anyPath, (raw) => {
        const once = tryNormalize(raw);
        if (once === undefined) return;
        expect(normalizeWorkdirPath(once)).toBe(once);
        if (once.startsWith("projects/")) {
          expect(once).toMatch(
            /^projects\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
          );
        }
      }),
      { numRuns: 5000 },
    );
  });

  test("paths made of safe components are always accepted", () => {
    const safeComponent = fc
      .stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._ -]{0,20}$/)
      .filter((s) => s.trim() === s && s !== "projects");
    fc.assert(
      fc.property(fc.array(safeComponent, { minLength: 1, maxLength: 6 }), (parts) => {
        const path = parts.join("/");
        expect(normalizeWorkdirPath(path)).toBe(path);
      }),
    );
  });
});
