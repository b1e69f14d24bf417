import { describe, expect, test } from "vitest";
import { WorkcellError } from "../../../shared/errors/index.ts";
import {
  canonicalUuid,
  isCanonicalUuid,
  isManagedWorkdirPath,
  isSandboxRuntimePath,
  managedWorkdirPath,
  newManagedWorkdirPath,
  normalizeWorkdirPath,
  runtimeWorkdirPath,
  SANDBOX_SKILLS_MOUNT,
  SANDBOX_USER_DATA_MOUNT,
} from "../../../shared/paths/index.ts";

const UUID = "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
const UUID_V4_LOWER = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("canonicalUuid", () => {
  test.each([
    [UUID],
    [UUID.toUpperCase()],
    [`{${UUID}}`],
    [UUID.replaceAll("-", "")],
    [`{${UUID.replaceAll("-", "").toUpperCase()}}`],
  ])("%j → lowercase hyphenated", (raw) => {
    expect(canonicalUuid(raw)).toBe(UUID);
  });

  test.each([
    [""],
    ["manual"],
    [`${UUID} `],
    [`{${UUID}`],
    [`${UUID}}`],
    [`{{${UUID}}}`],
    [UUID.replace("0", "g")],
    [`${UUID.slice(0, 8)}${UUID.slice(9)}`],
    [`urn:uuid:${UUID}`],
  ])("%j → undefined", (raw) => {
    expect(canonicalUuid(raw)).toBeUndefined();
  });

  test("isCanonicalUuid accepts the canonical form only", () => {
    expect(isCanonicalUuid(UUID)).toBe(true);
    expect(isCanonicalUuid(UUID.toUpperCase())).toBe(false);
    expect(isCanonicalUuid(`{${UUID}}`)).toBe(false);
  });
});

describe("managed Workdir paths", () => {
  test("managedWorkdirPath canonicalises the uuid", () => {
    expect(managedWorkdirPath(UUID.toUpperCase())).toBe(`projects/${UUID}`);
    expect(managedWorkdirPath(`{${UUID}}`)).toBe(`projects/${UUID}`);
  });

  test("managedWorkdirPath rejects a non-uuid", () => {
    expect(() => managedWorkdirPath("manual")).toThrow(WorkcellError);
    expect(() => managedWorkdirPath("../x")).toThrow(/UUID/);
  });

  test("newManagedWorkdirPath makes a fresh lowercase v4 path that normalises to itself", () => {
    const a = newManagedWorkdirPath();
    const b = newManagedWorkdirPath();
    expect(a).not.toBe(b);
    for (const path of [a, b]) {
      expect(path.startsWith("projects/")).toBe(true);
      expect(path.slice("projects/".length)).toMatch(UUID_V4_LOWER);
      expect(normalizeWorkdirPath(path)).toBe(path);
      expect(isManagedWorkdirPath(path)).toBe(true);
    }
  });

  test.each([
    [`projects/${UUID.toUpperCase()}`],
    [`projects/${UUID}/x`],
    ["projects/manual"],
    [`x/projects/${UUID}`],
    [UUID],
    [`projects/${UUID} `],
  ])("isManagedWorkdirPath(%j) is false", (path) => {
    expect(isManagedWorkdirPath(path)).toBe(false);
  });
});

describe("sandbox runtime paths", () => {
  test("mount points are the ones of docs/architecture.md §3", () => {
    expect(SANDBOX_USER_DATA_MOUNT).toBe("/home/gem/user-data");
    expect(SANDBOX_SKILLS_MOUNT).toBe("/home/gem/skills");
  });

  test("runtimeWorkdirPath puts the normalised Workdir under the user-data mount", () => {
    expect(runtimeWorkdirPath("code/app")).toBe("/home/gem/user-data/code/app");
    expect(runtimeWorkdirPath(` projects/${UUID.toUpperCase()} `)).toBe(
      `/home/gem/user-data/projects/${UUID}`,
    );
  });

  test("runtimeWorkdirPath refuses a path that would leave the mount", () => {
    expect(() => runtimeWorkdirPath("../skills")).toThrow(WorkcellError);
    expect(() => runtimeWorkdirPath("/etc")).toThrow(WorkcellError);
  });

  test("isSandboxRuntimePath recognises /home/gem and below only", () => {
    expect(isSandboxRuntimePath("/home/gem")).toBe(true);
    expect(isSandboxRuntimePath("/home/gem/user-data/a.txt")).toBe(true);
    expect(isSandboxRuntimePath("/home/gemstone")).toBe(false);
    expect(isSandboxRuntimePath("/a.txt")).toBe(false);
  });
});
