import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { sql } from "drizzle-orm";
import {
  createProjectionRefresher,
  type ProjectionRefresher,
  type ProjectionRefresherDeps,
} from "../../../agent-host/skills/projection-refresher.ts";
import { safeCopyTree } from "../../../agent-host/skills/safe-copy.ts";
import { openDirAt } from "../../../agent-host/skills/skill-fs.ts";
import { DEFAULT_SKILL_LIMITS } from "../../../agent-host/skills/skill-limits.ts";
import { grantLockKey } from "../../../agent-host/skills/skill-locks.ts";
import {
  createSourceStore,
  type InstallOutcome,
  type SourceStore,
} from "../../../agent-host/skills/source-store.ts";
import { createLibcSyscalls } from "../../../agent-host/workspace/libc-syscalls.ts";
import type { FsSyscalls } from "../../../agent-host/workspace/syscalls.ts";
import {
  AT_FDCWD,
  O_CLOEXEC,
  O_DIRECTORY,
  O_RDONLY,
} from "../../../agent-host/workspace/syscalls.ts";
import { createDb, type PostgresDb } from "../../../shared/db/client.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { freshDataRoot } from "../../support/data-root.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { testLogger } from "../../support/test-logger.ts";

export const silentLogger = testLogger();
export const testSignal = () => AbortSignal.timeout(60_000);

/** A file of a test skill: text, or text with a mode (default 0644). */
export type TreeFile = string | { readonly content: string | Buffer; readonly mode: number };
export type Tree = Readonly<Record<string, TreeFile>>;

export interface SkillsEnv {
  readonly database: TestDatabase;
  readonly db: PostgresDb;
  readonly dataRoot: string;
  readonly sys: FsSyscalls;
  readonly store: SourceStore;
  refresher(overrides?: Partial<ProjectionRefresherDeps>): ProjectionRefresher;
  /** Installs (or updates) a skill from a plain tree, through the source store. */
  install(slug: string, tree: Tree, kind?: "shared" | "builtin"): Promise<InstallOutcome>;
  grant(uid: string, slug: string): Promise<void>;
  /** Deletes the grant holding the uid's advisory lock, as the control plane does. */
  revoke(uid: string, slug: string): Promise<void>;
  projectionPath(uid: string): string;
  sourcePath(slug: string): string;
  cleanup(): Promise<void>;
}

export async function setupSkills(): Promise<SkillsEnv> {
  const database = await freshDatabase();
  const root = await freshDataRoot();
  const db = createDb(database.sql);
  const sys = createLibcSyscalls();
  const store = createSourceStore({
    db,
    sys,
    dataRoot: root.path,
    logger: silentLogger,
    durable: false,
  });
  const scratch = mkdtempSync(join(tmpdir(), "workcell-skill-src-"));
  return {
    database,
    db,
    dataRoot: root.path,
    sys,
    store,
    refresher: (overrides = {}) =>
      createProjectionRefresher({
        db,
        sys,
        dataRoot: root.path,
        logger: silentLogger,
        ...overrides,
      }),
    async install(slug, tree, kind = "shared") {
      const dir = mkdtempSync(join(scratch, "tree-"));
      writeTree(dir, tree);
      const opened = sys.openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (!opened.ok) throw new Error(`open ${dir}: errno ${opened.errno}`);
      try {
        return await store.install(
          {
            slug,
            kind,
            sourceVersion: "test",
            fill: async (tempFd, signal) => {
              await safeCopyTree(sys, opened.value, tempFd, {
                limits: DEFAULT_SKILL_LIMITS,
                signal,
              });
              return [];
            },
          },
          testSignal(),
        );
      } finally {
        sys.close(opened.value);
        rmSync(dir, { recursive: true, force: true });
      }
    },
    async grant(uid, slug) {
      await db.execute(
        sql`insert into skill_grants (uid, slug) values (${uid}, ${slug}) on conflict do nothing`,
      );
    },
    async revoke(uid, slug) {
      await db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${grantLockKey(uid)})`);
        await tx.execute(sql`delete from skill_grants where uid = ${uid} and slug = ${slug}`);
      });
    },
    projectionPath: (uid) => join(root.path, "skills", "projections", uidDirname(uid)),
    sourcePath: (slug) => join(root.path, "skills", "sources", slug),
    async cleanup() {
      rmSync(scratch, { recursive: true, force: true });
      makeWritable(root.path);
      await root.remove();
      await database.drop();
    },
  };
}

/** Writes a tree of files (parents created 0755), each with its mode. */
export function writeTree(dir: string, tree: Tree): void {
  for (const [path, file] of Object.entries(tree)) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    const content = typeof file === "string" ? file : file.content;
    writeFileSync(target, content);
    chmodSync(target, typeof file === "string" ? 0o644 : file.mode);
  }
}

/** Everything below `dir`: relative path → "dir" | "file <mode> <content>" | "symlink" | "special". */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel))) {
      const path = rel === "" ? name : `${rel}/${name}`;
      const st = lstatSync(join(dir, path));
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isDirectory()) {
        out[path] = `dir ${mode}`;
        walk(path);
      } else if (st.isFile()) {
        out[path] = `file ${mode} ${readFileSync(join(dir, path), "utf8")}`;
      } else {
        out[path] = st.isSymbolicLink() ? "symlink" : "special";
      }
    }
  };
  walk("");
  return out;
}

/** Names directly in a directory, sorted; [] when it does not exist. */
export function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** Read-only trees (0555) must become writable for the test's own cleanup as non-root. */
export function makeWritable(dir: string): void {
  try {
    const st = lstatSync(dir);
    if (!st.isDirectory()) return;
    chmodSync(dir, 0o755);
    for (const name of readdirSync(dir)) makeWritable(join(dir, name));
  } catch {
    // gone already
  }
}

/** Opens a directory by path for a test helper's fd-relative checks. */
export function openDir(sys: FsSyscalls, path: string): number {
  const parent = sys.openat(AT_FDCWD, dirname(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!parent.ok) throw new Error(`open ${path}`);
  try {
    const opened = openDirAt(sys, parent.value, path.split("/").at(-1) as string);
    if (!opened.ok) throw new Error(`open ${path}: errno ${opened.errno}`);
    return opened.value;
  } finally {
    sys.close(parent.value);
  }
}
