import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDb } from "../../../shared/db/client.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { namesIn, type SkillsEnv, setupSkills, snapshot, testSignal } from "./skills-harness.ts";

const ALICE = "alice";
const SECRET = "host secret: must never reach a projection\n";

const HELLO = {
  "SKILL.md": "---\nname: hello\ndescription: Says hello.\n---\n# hello\n",
  "scripts/run.sh": { content: "#!/bin/sh\necho hi\n", mode: 0o755 },
  "docs/notes.txt": "notes\n",
};
const PDF = { "SKILL.md": "---\ndescription: PDF tools\n---\n", "lib/a.py": "print(1)\n" };

describe("skill projection refresh", () => {
  let env: SkillsEnv;

  beforeEach(async () => {
    env = await setupSkills();
    await env.install("hello", HELLO);
    await env.install("pdf-tools", PDF);
  });

  afterEach(async () => {
    await env.cleanup();
  });

  const projected = (uid = ALICE) =>
    namesIn(env.projectionPath(uid)).filter((n) => !n.startsWith("."));
  const allNames = (uid = ALICE) => namesIn(env.projectionPath(uid));

  it("projects exactly the granted skills, read-only, exec bits kept, and removes a revoked one", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    const first = await env.refresher().refresh(ALICE, testSignal());
    expect(first).toMatchObject({ ok: true, projected: ["hello", "pdf-tools"], failures: [] });
    expect([...first.copied].sort()).toEqual(["hello", "pdf-tools"]);
    expect(snapshot(join(env.projectionPath(ALICE), "hello"))).toEqual({
      "SKILL.md": `file 444 ${HELLO["SKILL.md"]}`,
      scripts: "dir 555",
      "scripts/run.sh": "file 555 #!/bin/sh\necho hi\n",
      docs: "dir 555",
      "docs/notes.txt": "file 444 notes\n",
    });
    expect(statSync(join(env.projectionPath(ALICE), "hello")).mode & 0o7777).toBe(0o555);
    // Another uid's projection is untouched and empty.
    expect(namesIn(env.projectionPath("bob"))).toEqual([]);

    await env.revoke(ALICE, "pdf-tools");
    const second = await env.refresher().refresh(ALICE, testSignal());
    expect(second).toMatchObject({
      ok: true,
      projected: ["hello"],
      removed: ["pdf-tools"],
      copied: [],
    });
    expect(allNames()).toEqual(["hello"]);
  });

  it("keeps the directory (same inode) when nothing changed, even without its state file", async () => {
    await env.grant(ALICE, "hello");
    const refresher = env.refresher();
    await refresher.refresh(ALICE, testSignal());
    const dir = join(env.projectionPath(ALICE), "hello");
    const inode = statSync(dir).ino;

    const noop = await refresher.refresh(ALICE, testSignal());
    expect(noop).toMatchObject({ ok: true, copied: [], unchanged: ["hello"] });
    expect(statSync(dir).ino).toBe(inode);

    // Re-importing identical content changes the source's inodes but not its hash.
    expect((await env.install("hello", HELLO)).ok).toBe(true);
    // The state file is a cache: without it the refresh compares content hashes.
    unlinkSync(`${env.projectionPath(ALICE)}.state`);
    const again = await refresher.refresh(ALICE, testSignal());
    expect(again).toMatchObject({ ok: true, copied: [], unchanged: ["hello"] });
    expect(statSync(dir).ino).toBe(inode);
    expect(allNames()).toEqual(["hello"]);
  });

  it("propagates an exec-bit change (0644 -> 0755) as new content", async () => {
    await env.install("hello", {
      ...HELLO,
      "scripts/run.sh": { content: "#!/bin/sh\necho hi\n", mode: 0o644 },
    });
    await env.grant(ALICE, "hello");
    await env.refresher().refresh(ALICE, testSignal());
    const script = join(env.projectionPath(ALICE), "hello", "scripts", "run.sh");
    expect(statSync(script).mode & 0o7777).toBe(0o444);
    const before = await hashOf(env, "hello");

    await env.install("hello", {
      ...HELLO,
      "scripts/run.sh": { content: "#!/bin/sh\necho hi\n", mode: 0o755 },
    });
    expect(await hashOf(env, "hello")).not.toBe(before);
    const outcome = await env.refresher().refresh(ALICE, testSignal());
    expect(outcome).toMatchObject({ ok: true, copied: ["hello"] });
    expect(statSync(script).mode & 0o7777).toBe(0o555);
    expect(allNames()).toEqual(["hello"]);
  });

  it.each([
    [
      "a symlink",
      (dir: string, outside: string) => symlinkSync(outside, join(dir, "docs", "link")),
    ],
    ["a dangling symlink", (dir: string) => symlinkSync("/nonexistent", join(dir, "dangling"))],
    ["a FIFO", (dir: string) => execFileSync("mkfifo", [join(dir, "docs", "fifo")])],
    ["a Unix socket", (dir: string) => bindSocket(join(dir, "docs", "sock"))],
    [
      "a character device",
      (dir: string) => execFileSync("mknod", [join(dir, "docs", "null"), "c", "1", "3"]),
    ],
  ])("a source holding %s loses its projection and fails the refresh", async (_what, plant) => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await env.refresher().refresh(ALICE, testSignal());
    expect(projected()).toEqual(["hello", "pdf-tools"]);
    const outside = join(env.dataRoot, "outside-secret.txt");
    writeFileSync(outside, SECRET);

    const source = env.sourcePath("hello");
    chmodSync(source, 0o755);
    chmodSync(join(source, "docs"), 0o755);
    plant(source, outside);
    const outcome = await env.refresher().refresh(ALICE, testSignal());

    expect(outcome.ok).toBe(false);
    expect(outcome.failures).toEqual([
      expect.objectContaining({ slug: "hello", reason: "source_refused" }),
    ]);
    expect(outcome.projected).toEqual(["pdf-tools"]);
    expect(allNames()).toEqual(["pdf-tools"]);
    expect(readFileSync(outside, "utf8")).toBe(SECRET);
  });

  it("catches a symlink swapped into the source during the copy", async () => {
    await env.install("hello", { ...HELLO, "docs/b.txt": "b\n", "docs/z.txt": "z\n" });
    await env.grant(ALICE, "hello");
    const outside = join(env.dataRoot, "outside-secret.txt");
    writeFileSync(outside, SECRET);
    const source = env.sourcePath("hello");
    let swapped = 0;
    const refresher = env.refresher({
      hooks: {
        // Between the fingerprint walk (which saw regular files) and the copy's open.
        onCopyEntry(slug, path) {
          if (slug !== "hello" || !path.startsWith("docs/")) return;
          if (swapped++ > 0) return;
          chmodSync(join(source, "docs"), 0o755);
          for (const name of ["b.txt", "notes.txt", "z.txt"]) {
            const target = join(source, "docs", name);
            symlinkSync(outside, `${target}.new`);
            renameSync(`${target}.new`, target);
          }
        },
      },
    });
    const outcome = await refresher.refresh(ALICE, testSignal());

    expect(swapped).toBeGreaterThan(0);
    expect(outcome.ok).toBe(false);
    expect(outcome.failures).toEqual([
      expect.objectContaining({ slug: "hello", reason: "source_refused" }),
    ]);
    expect(allNames()).toEqual([]);
    expect(readFileSync(outside, "utf8")).toBe(SECRET);
  });

  it("catches a directory swapped for a symlink during the copy", async () => {
    await env.grant(ALICE, "hello");
    const outsideDir = join(env.dataRoot, "outside-dir");
    mkdirSync(outsideDir);
    writeFileSync(join(outsideDir, "secret.txt"), SECRET);
    const source = env.sourcePath("hello");
    const refresher = env.refresher({
      hooks: {
        onCopyEntry(_slug, path) {
          if (path !== "docs" && path !== "scripts") return;
          chmodSync(source, 0o755);
          chmodSync(join(source, path), 0o755);
          rmSync(join(source, path), { recursive: true, force: true });
          symlinkSync(outsideDir, join(source, path));
        },
      },
    });
    const outcome = await refresher.refresh(ALICE, testSignal());
    expect(outcome.failures).toEqual([
      expect.objectContaining({ slug: "hello", reason: "source_refused" }),
    ]);
    expect(allNames()).toEqual([]);
  });

  it("refuses a source whose bytes differ from the catalogue's content hash", async () => {
    await env.grant(ALICE, "hello");
    await env.refresher().refresh(ALICE, testSignal());
    const dir = join(env.sourcePath("hello"), "docs");
    chmodSync(dir, 0o755);
    // Replaced the way an editor saves: a new file renamed over the old one.
    writeFileSync(join(dir, "notes.new"), "tampered\n");
    renameSync(join(dir, "notes.new"), join(dir, "notes.txt"));
    const outcome = await env.refresher().refresh(ALICE, testSignal());
    expect(outcome.failures).toEqual([
      expect.objectContaining({ slug: "hello", reason: "source_mismatch" }),
    ]);
    expect(allNames()).toEqual([]);
  });

  it("keeps the verified copy when a source file is rewritten in place, and refuses the next copy", async () => {
    await env.grant(ALICE, "hello");
    await env.refresher().refresh(ALICE, testSignal());
    const notes = join(env.sourcePath("hello"), "docs", "notes.txt");
    chmodSync(notes, 0o644);
    writeFileSync(notes, "tampered\n");
    // The no-op check reads no file: the projection still holds the verified bytes.
    const noop = await env.refresher().refresh(ALICE, testSignal());
    expect(noop).toMatchObject({ ok: true, unchanged: ["hello"] });
    expect(
      readFileSync(join(env.projectionPath(ALICE), "hello", "docs", "notes.txt"), "utf8"),
    ).toBe("notes\n");
    // Any copy of the altered source fails the content hash check (fail closed).
    unlinkSync(`${env.projectionPath(ALICE)}.state`);
    const copy = await env.refresher().refresh(ALICE, testSignal());
    expect(copy.failures).toEqual([
      expect.objectContaining({ slug: "hello", reason: "source_mismatch" }),
    ]);
    expect(allNames()).toEqual([]);
  });

  it("removes entries that are no skill of the user (a planted symlink as a link, never followed)", async () => {
    await env.grant(ALICE, "hello");
    await env.refresher().refresh(ALICE, testSignal());
    const root = env.projectionPath(ALICE);
    const outsideDir = join(env.dataRoot, "outside-dir");
    mkdirSync(outsideDir);
    writeFileSync(join(outsideDir, "keep.txt"), SECRET);
    symlinkSync(outsideDir, join(root, "pdf-tools"));
    symlinkSync(outsideDir, join(root, "evil"));
    mkdirSync(join(root, ".wc-skill-tmp-deadbeef"));
    writeFileSync(join(root, "junk.txt"), "x");

    // pdf-tools is not granted: the symlink named like it goes too.
    const outcome = await env.refresher().refresh(ALICE, testSignal());
    expect(outcome).toMatchObject({ ok: true, projected: ["hello"] });
    expect([...outcome.removed].sort()).toEqual(["evil", "junk.txt", "pdf-tools"]);
    expect(allNames()).toEqual(["hello"]);
    expect(readFileSync(join(outsideDir, "keep.txt"), "utf8")).toBe(SECRET);

    // A granted name that is a symlink is replaced by the real copy.
    await env.grant(ALICE, "pdf-tools");
    symlinkSync(outsideDir, join(root, "pdf-tools"));
    const granted = await env.refresher().refresh(ALICE, testSignal());
    expect(granted).toMatchObject({ ok: true, projected: ["hello", "pdf-tools"] });
    expect(statSync(join(root, "pdf-tools")).isDirectory()).toBe(true);
    expect(existsSync(join(root, "pdf-tools", "keep.txt"))).toBe(false);
    expect(readFileSync(join(outsideDir, "keep.txt"), "utf8")).toBe(SECRET);
  });

  it("fails closed when the grants cannot be read: the projection is emptied", async () => {
    await env.grant(ALICE, "hello");
    await env.refresher().refresh(ALICE, testSignal());
    expect(projected()).toEqual(["hello"]);

    // A database that does not answer: no grant context at all.
    const dead = postgres("postgres://nobody@127.0.0.1:1/none", {
      max: 1,
      connect_timeout: 2,
      onnotice: () => {},
    });
    try {
      const outcome = await env.refresher({ db: createDb(dead) }).refresh(ALICE, testSignal());
      expect(outcome).toMatchObject({ ok: false, projected: [] });
      expect(outcome.failures).toEqual([
        expect.objectContaining({ slug: null, reason: "grants_unavailable" }),
      ]);
      expect(allNames()).toEqual([]);
    } finally {
      await dead.end({ timeout: 1 });
    }
  });

  it("projects nothing for a grant whose source is missing, and says so", async () => {
    await env.grant(ALICE, "hello");
    chmodSync(env.sourcePath("hello"), 0o755);
    rmSync(env.sourcePath("hello"), { recursive: true, force: true });
    const outcome = await env.refresher().refresh(ALICE, testSignal());
    expect(outcome.failures).toEqual([
      expect.objectContaining({ slug: "hello", reason: "source_missing" }),
    ]);
    expect(allNames()).toEqual([]);
  });

  it("uses the hashed dirname for a uid that is not a plain name", async () => {
    const uid = "oidc:tenant/user@example.com";
    await env.grant(uid, "hello");
    const outcome = await env.refresher().refresh(uid, testSignal());
    expect(outcome.ok).toBe(true);
    expect(env.projectionPath(uid)).toContain(uidDirname(uid));
    expect(namesIn(env.projectionPath(uid))).toEqual(["hello"]);
  });
});

async function hashOf(env: SkillsEnv, slug: string): Promise<string> {
  const rows = await env.database.sql`select content_hash from skills where slug = ${slug}`;
  return rows[0]?.content_hash as string;
}

/** A Unix socket file left behind, as a crashed daemon would leave it. */
function bindSocket(path: string): void {
  execFileSync("python3", [
    "-c",
    "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
    path,
  ]);
}
