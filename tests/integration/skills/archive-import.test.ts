import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createSkillImporter,
  type SkillImporter,
} from "../../../agent-host/skills/skill-importer.ts";
import { buildTarGz, buildZip, deflatedZeros, tarGzBomb } from "./archive-builder.ts";
import { namesIn, type SkillsEnv, setupSkills, snapshot, testSignal } from "./skills-harness.ts";

const MANIFEST =
  "---\nname: pdf-tools\ndescription: 'Tools for PDFs: split, merge.'\n---\n# PDF tools\n";
const GiB = 1024 * 1024 * 1024;

describe("skill archive import", () => {
  let env: SkillsEnv;
  let importer: SkillImporter;
  let zeros: Awaited<ReturnType<typeof deflatedZeros>>;
  let smallZeros: Awaited<ReturnType<typeof deflatedZeros>>;

  beforeAll(async () => {
    // 1 GiB of zeros, deflated once (about 1 MiB) and reused by every bomb below.
    zeros = await deflatedZeros(GiB);
    smallZeros = await deflatedZeros(60 * 1024 * 1024);
  });

  beforeEach(async () => {
    env = await setupSkills();
    importer = createSkillImporter({ store: env.store, sys: env.sys, durable: false });
  });

  afterEach(async () => {
    await env.cleanup();
  });

  afterAll(() => {
    zeros = undefined as never;
    smallZeros = undefined as never;
  });

  const importArchive = (archive: Buffer, slug = "pdf-tools") =>
    importer.importArchive({ slug, archive, sourceVersion: "upload-1" }, testSignal());

  it("imports a zip with one top directory: modes normalized, exec bit kept, catalogue row written", async () => {
    const archive = buildZip([
      { name: "pdf-tools/", unixMode: 0o040755 },
      { name: "pdf-tools/SKILL.md", data: MANIFEST },
      { name: "pdf-tools/bin/split.sh", data: "#!/bin/sh\necho split\n", unixMode: 0o100755 },
      { name: "pdf-tools/lib/x.py", data: "print(1)\n", stored: true },
    ]);
    const outcome = await importArchive(archive);
    expect(outcome).toMatchObject({
      ok: true,
      status: "installed",
      skill: { slug: "pdf-tools", kind: "shared", description: "Tools for PDFs: split, merge." },
    });
    expect(snapshot(env.sourcePath("pdf-tools"))).toEqual({
      "SKILL.md": `file 444 ${MANIFEST}`,
      bin: "dir 555",
      "bin/split.sh": "file 555 #!/bin/sh\necho split\n",
      lib: "dir 555",
      "lib/x.py": "file 444 print(1)\n",
    });
    const rows = await env.database
      .sql`select slug, kind, content_hash, source_version from skills`;
    expect(rows).toEqual([
      {
        slug: "pdf-tools",
        kind: "shared",
        content_hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        source_version: "upload-1",
      },
    ]);
    expect(namesIn(join(env.dataRoot, "skills", "sources"))).toEqual(["pdf-tools"]);

    // The same content as a tar.gz (with ./ names) hashes the same: nothing changes.
    const same = await buildTarGz([
      { name: "./", type: "directory" },
      { name: "./SKILL.md", data: MANIFEST },
      { name: "./bin/", type: "directory" },
      { name: "./bin/split.sh", data: "#!/bin/sh\necho split\n", mode: 0o755 },
      { name: "./lib/x.py", data: "print(1)\n" },
    ]);
    const again = await importArchive(same);
    expect(again).toMatchObject({ ok: true, status: "unchanged" });
    if (!again.ok || !outcome.ok) throw new Error("unreachable");
    expect(again.skill.contentHash).toBe(outcome.skill.contentHash);

    // New content updates the source in place of the old one.
    const changed = await importArchive(
      await buildTarGz([{ name: "SKILL.md", data: "---\ndescription: v2\n---\n" }]),
    );
    expect(changed).toMatchObject({ ok: true, status: "updated", skill: { description: "v2" } });
    expect(snapshot(env.sourcePath("pdf-tools"))).toEqual({
      "SKILL.md": "file 444 ---\ndescription: v2\n---\n",
    });
    expect(namesIn(join(env.dataRoot, "skills", "sources"))).toEqual(["pdf-tools"]);
  });

  it("refuses a slug that is not lowercase words with hyphens, and a builtin's slug", async () => {
    const archive = buildZip([{ name: "SKILL.md", data: MANIFEST }]);
    expect(await importArchive(archive, "Bad_Slug")).toMatchObject({
      ok: false,
      reason: "invalid_slug",
    });
    expect(await importArchive(archive, "..")).toMatchObject({ ok: false, reason: "invalid_slug" });
    await env.install("hello", { "SKILL.md": "---\ndescription: builtin\n---\n" }, "builtin");
    expect(await importArchive(archive, "hello")).toMatchObject({
      ok: false,
      reason: "kind_conflict",
    });
    expect(snapshot(env.sourcePath("hello"))).toEqual({
      "SKILL.md": "file 444 ---\ndescription: builtin\n---\n",
    });
  });

  describe("attacks: each is refused and nothing is written", () => {
    const OUTSIDE = "evil-outside-marker";

    // A victim: an existing skill under the attacked slug, whose bytes must not change.
    beforeEach(async () => {
      await env.install("pdf-tools", {
        "SKILL.md": "---\ndescription: original\n---\n",
        "a.txt": "original\n",
      });
    });

    const attacks: [string, string, () => Promise<Buffer>][] = [
      [
        "zip entry '../evil'",
        "unsafe_name",
        async () =>
          buildZip([
            { name: "SKILL.md", data: MANIFEST },
            { name: `../${OUTSIDE}`, data: "x" },
          ]),
      ],
      [
        "tar entry '../evil'",
        "unsafe_name",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: `../${OUTSIDE}`, data: "x" },
          ]),
      ],
      [
        "tar entry 'a/../../evil'",
        "unsafe_name",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: `a/../../${OUTSIDE}`, data: "x" },
          ]),
      ],
      [
        "zip absolute path",
        "unsafe_name",
        async () =>
          buildZip([
            { name: "SKILL.md", data: MANIFEST },
            { name: `/tmp/${OUTSIDE}`, data: "x" },
          ]),
      ],
      [
        "tar absolute path",
        "unsafe_name",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: `/tmp/${OUTSIDE}`, data: "x" },
          ]),
      ],
      [
        "zip backslash name",
        "unsafe_name",
        async () =>
          buildZip([
            { name: "SKILL.md", data: MANIFEST },
            { name: `..\\${OUTSIDE}`, data: "x" },
          ]),
      ],
      [
        "zip symlink entry",
        "link_entry",
        async () =>
          buildZip([
            { name: "SKILL.md", data: MANIFEST },
            { name: "passwd", data: "/etc/passwd", unixMode: 0o120777 },
          ]),
      ],
      [
        "tar symlink entry",
        "link_entry",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: "passwd", type: "symlink", linkname: "/etc/passwd" },
          ]),
      ],
      [
        "tar hard-link entry",
        "link_entry",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: "shadow", type: "link", linkname: "/etc/shadow" },
          ]),
      ],
      [
        "tar character device",
        "special_entry",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: "null", type: "character-device", devmajor: 1, devminor: 3 },
          ]),
      ],
      [
        "tar block device",
        "special_entry",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: "sda", type: "block-device", devmajor: 8, devminor: 0 },
          ]),
      ],
      [
        "tar FIFO",
        "special_entry",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: "pipe", type: "fifo" },
          ]),
      ],
      [
        "zip FIFO by Unix mode",
        "special_entry",
        async () =>
          buildZip([
            { name: "SKILL.md", data: MANIFEST },
            { name: "pipe", unixMode: 0o010644 },
          ]),
      ],
      [
        "zip duplicate entries",
        "duplicate_entry",
        async () =>
          buildZip([
            { name: "SKILL.md", data: MANIFEST },
            { name: "SKILL.md", data: "second" },
          ]),
      ],
      [
        "tar duplicate entries",
        "duplicate_entry",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: "x", data: "1" },
            { name: "./x", data: "2" },
          ]),
      ],
      [
        "tar file then directory of the same name",
        "duplicate_entry",
        () =>
          buildTarGz([
            { name: "SKILL.md", data: MANIFEST },
            { name: "x", data: "1" },
            { name: "x/y", data: "2" },
          ]),
      ],
      [
        "1 GiB-expanding zip (honest sizes)",
        "compression_ratio",
        async () =>
          buildZip([
            { name: "SKILL.md", data: MANIFEST },
            { name: "zeros", raw: zeros },
          ]),
      ],
      [
        "1 GiB-expanding zip (sizes lie)",
        "too_large",
        async () =>
          buildZip([
            { name: "SKILL.md", data: MANIFEST },
            { name: "zeros", raw: zeros, declaredSize: 1000 },
          ]),
      ],
      // The tar header declares the size, so this one is refused before inflating it.
      ["1 GiB-expanding tar.gz", "too_large", () => tarGzBomb("zeros", zeros)],
      // Under every size limit, but 60 MiB of zeros from about 60 KiB: the gzip ratio.
      ["60 MiB-expanding tar.gz", "compression_ratio", () => tarGzBomb("zeros", smallZeros)],
      [
        "no SKILL.md",
        "missing_skill_md",
        async () => buildZip([{ name: "README.md", data: "hi" }]),
      ],
      [
        "SKILL.md not at the top",
        "missing_skill_md",
        () =>
          buildTarGz([
            { name: "a/SKILL.md", data: MANIFEST },
            { name: "b/x", data: "x" },
          ]),
      ],
      [
        "neither zip nor tar.gz",
        "unsupported_format",
        async () => Buffer.from("#!/bin/sh\nrm -rf /\n"),
      ],
      [
        "truncated zip",
        "malformed",
        async () => buildZip([{ name: "SKILL.md", data: MANIFEST }]).subarray(0, 40),
      ],
      [
        "truncated tar.gz",
        "malformed",
        async () =>
          (await buildTarGz([{ name: "SKILL.md", data: MANIFEST.repeat(50) }])).subarray(0, 60),
      ],
    ];

    it.each(attacks)("%s", async (_name, problem, build) => {
      const sources = join(env.dataRoot, "skills", "sources");
      const before = snapshot(sources);
      const rowsBefore = await env.database.sql`select * from skills order by slug`;

      const outcome = await importArchive(await build());

      expect(outcome).toMatchObject({ ok: false, reason: "archive_rejected", problem });
      expect(snapshot(sources)).toEqual(before);
      expect(await env.database.sql`select * from skills order by slug`).toEqual(rowsBefore);
      for (const place of [
        env.dataRoot,
        join(env.dataRoot, ".."),
        join(env.dataRoot, "skills"),
        "/tmp",
      ]) {
        expect(existsSync(join(place, OUTSIDE))).toBe(false);
      }
    });

    it("too many entries", async () => {
      const small = createSkillImporter({
        store: env.store,
        sys: env.sys,
        durable: false,
        limits: { maxEntries: 5 },
      });
      const entries = [
        { name: "SKILL.md", data: MANIFEST },
        ...Array.from({ length: 6 }, (_, i) => ({ name: `f${i}`, data: "x" })),
      ];
      const sources = join(env.dataRoot, "skills", "sources");
      const before = snapshot(sources);
      for (const archive of [buildZip(entries), await buildTarGz(entries)]) {
        const outcome = await small.importArchive(
          { slug: "pdf-tools", archive, sourceVersion: null },
          testSignal(),
        );
        expect(outcome).toMatchObject({ ok: false, problem: "too_many_entries" });
        expect(snapshot(sources)).toEqual(before);
      }
    });
  });
});
