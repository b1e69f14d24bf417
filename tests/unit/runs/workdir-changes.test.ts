import { describe, expect, test } from "vitest";
import {
  diffWorkdirSnapshots,
  type FileStamp,
  UNKNOWN_CHANGES,
  type WorkdirSnapshot,
} from "../../../agent-host/runs/change-batch/workdir-changes.ts";

/** A snapshot that listed every directory it saw, unless `incomplete` names some. */
function snapshot(
  files: Record<string, FileStamp>,
  options: { dirs?: string[]; incomplete?: string[]; truncated?: boolean } = {},
): WorkdirSnapshot {
  const dirs = new Set(["", ...(options.dirs ?? [])]);
  for (const path of Object.keys(files)) {
    const parts = path.split("/").slice(0, -1);
    for (let i = 1; i <= parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
  }
  const incomplete = new Set(options.incomplete ?? []);
  return {
    files: new Map(Object.entries(files)),
    dirs,
    complete: new Set([...dirs].filter((d) => !incomplete.has(d))),
    truncated: options.truncated ?? incomplete.size > 0,
  };
}

const at = (size: number, mtimeMs = 1000): FileStamp => ({ size, mtimeMs });

describe("diffWorkdirSnapshots", () => {
  test("added, modified (size or mtime), deleted; unchanged files are not listed; sorted", () => {
    const before = snapshot({
      "keep.txt": at(1),
      "grow.txt": at(1),
      "touch.txt": at(5, 1000),
      "gone.txt": at(3),
      "old/a.txt": at(2),
    });
    const after = snapshot({
      "keep.txt": at(1),
      "grow.txt": at(9),
      "touch.txt": at(5, 1000.5),
      "new/deep/b.txt": at(4),
      "outputs/r.md": at(0),
    });
    expect(diffWorkdirSnapshots(before, after, 100)).toEqual({
      truncated: false,
      items: [
        { path: "gone.txt", change: "deleted", size: null },
        { path: "grow.txt", change: "modified", size: 9 },
        { path: "new/deep/b.txt", change: "added", size: 4 },
        { path: "old/a.txt", change: "deleted", size: null },
        { path: "outputs/r.md", change: "added", size: 0 },
        { path: "touch.txt", change: "modified", size: 5 },
      ],
    });
  });

  test("a file replaced by a directory of the same name", () => {
    const before = snapshot({ x: at(1) });
    const after = snapshot({ "x/y": at(2) });
    expect(diffWorkdirSnapshots(before, after, 100).items).toEqual([
      { path: "x", change: "deleted", size: null },
      { path: "x/y", change: "added", size: 2 },
    ]);
  });

  test("a directory left unlisted by a bound hides its changes but never reports its files deleted", () => {
    const before = snapshot({ "big/a": at(1), "big/b": at(1), "top.txt": at(1) });
    // The second snapshot ran out of budget before listing big/.
    const after = snapshot({ "top.txt": at(2) }, { dirs: ["big"], incomplete: ["big"] });
    expect(diffWorkdirSnapshots(before, after, 100)).toEqual({
      truncated: true,
      items: [{ path: "top.txt", change: "modified", size: 2 }],
    });
    // big/ listed in full without a and b: they are gone. Below the unlisted big/sub
    // nothing is known, even for a path never seen before.
    const later = snapshot({ "top.txt": at(1), "big/sub/new": at(1) }, { incomplete: ["big/sub"] });
    expect(diffWorkdirSnapshots(before, later, 100)).toEqual({
      truncated: true,
      items: [
        { path: "big/a", change: "deleted", size: null },
        { path: "big/b", change: "deleted", size: null },
      ],
    });
  });

  test("a directory that did not exist is known empty when its ancestor was listed in full", () => {
    const before = snapshot({}, { dirs: ["elsewhere"], incomplete: ["elsewhere"] });
    const after = snapshot({ "fresh/x/y.txt": at(3) });
    expect(diffWorkdirSnapshots(before, after, 100)).toEqual({
      truncated: true,
      items: [{ path: "fresh/x/y.txt", change: "added", size: 3 }],
    });
  });

  test("the list is cut at its cap, first paths kept, and marked truncated", () => {
    const after = snapshot({ c: at(1), a: at(1), b: at(1) });
    expect(diffWorkdirSnapshots(snapshot({}), after, 2)).toEqual({
      truncated: true,
      items: [
        { path: "a", change: "added", size: 1 },
        { path: "b", change: "added", size: 1 },
      ],
    });
    expect(diffWorkdirSnapshots(snapshot({}), snapshot({}), 0)).toEqual({
      truncated: false,
      items: [],
    });
  });

  test("unknown changes are empty and truncated", () => {
    expect(UNKNOWN_CHANGES).toEqual({ items: [], truncated: true });
  });
});
