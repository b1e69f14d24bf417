import { describe, expect, it } from "vitest";
import { scanGrowth } from "../../../agent-host/quota/scan-growth.ts";
import { DirFiles, DirFilesWriter } from "../../../agent-host/workspace/dir-files.ts";
import type { MetadataStamp } from "../../../agent-host/workspace/metadata-scan.ts";

const stamp = (size: number, ino: number): MetadataStamp => ({
  size,
  mtimeMs: 1,
  ctimeMs: 1,
  ino,
});

function flat(files: DirFiles): [string, number][] {
  return [...files].map(([path, s]): [string, number] => [path, s.size]).sort();
}

describe("DirFiles", () => {
  const base = new DirFiles(
    DirFiles.group(
      new Map([
        ["a.txt", stamp(1, 1)],
        ["d/b.txt", stamp(10, 2)],
        ["d/e/c.txt", stamp(100, 3)],
        ["x/y.txt", stamp(1000, 4)],
      ]),
    ),
  );

  it("reads like the flat map it was grouped from", () => {
    expect(flat(base)).toEqual([
      ["a.txt", 1],
      ["d/b.txt", 10],
      ["d/e/c.txt", 100],
      ["x/y.txt", 1000],
    ]);
    expect(base.size).toBe(4);
    expect(base.get("d/e/c.txt")?.ino).toBe(3);
    expect(base.has("d/e")).toBe(false);
    expect(base.bytes).toBe(1111);
  });

  it("writes copy only the directories written; the last scan is left as it was", () => {
    const writer = new DirFilesWriter(base);
    writer.set("d/new.txt", stamp(5, 5));
    writer.delete("x/y.txt");
    writer.set("a.txt", stamp(2, 1));
    const next = writer.publish();
    expect(flat(next)).toEqual([
      ["a.txt", 2],
      ["d/b.txt", 10],
      ["d/e/c.txt", 100],
      ["d/new.txt", 5],
    ]);
    expect(next.size).toBe(4);
    expect(next.byDir.get("d/e")).toBe(base.byDir.get("d/e"));
    expect(next.byDir.has("x")).toBe(false);
    expect(flat(base)).toHaveLength(4);
    expect(base.get("x/y.txt")?.size).toBe(1000);
    // Sums carried over for the shared directories, summed again for the written ones.
    expect(next.bytes).toBe(2 + 10 + 100 + 5);
    expect(base.bytes).toBe(1111);
  });

  it("gives the quota the same growth as a sum over every stamp", () => {
    const writer = new DirFilesWriter(base);
    writer.set("d/e/big.bin", stamp(4096, 9));
    const next = writer.publish();
    const scan = (files: ReadonlyMap<string, MetadataStamp>) => ({
      files,
      dirs: new Set(["", "d", "d/e", "x"]),
      complete: new Set(["", "d", "d/e", "x"]),
      truncated: false,
    });
    const asFlat = (files: DirFiles) => new Map([...files]);
    expect(scanGrowth(scan(base), scan(next))).toEqual(
      scanGrowth(scan(asFlat(base)), scan(asFlat(next))),
    );
    expect(scanGrowth(scan(base), scan(next))?.bytes).toBe(4096);
  });
});
