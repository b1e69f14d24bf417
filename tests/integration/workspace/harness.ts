import { createHash } from "node:crypto";
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type FsSyscalls,
  type ResolverKind,
  type UserWorkspaces,
  type WorkspaceFs,
  type WorkspaceLimits,
} from "../../../agent-host/workspace/index.ts";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { checkThenCleanup } from "../../support/check-then-cleanup.ts";
import { freshDataRoot } from "../../support/data-root.ts";

/** Every test of the suite runs once per resolver (docs/architecture.md §5: both are covered). */
export const RESOLVER_KINDS: readonly ResolverKind[] = ["openat2", "walk"];

export const UID = "alice";
export const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
export const SECRET = "TOP SECRET: must never be read or changed through the workspace layer\n";

export interface WorkspaceEnv {
  readonly kind: ResolverKind;
  readonly dataRoot: string;
  /** `<data-root>/users/alice`: the parent of the workspace and of `outside/`. */
  readonly userDir: string;
  /** Absolute path of the UserWorkspace. */
  readonly workspace: string;
  /** Absolute path of the Workdir. */
  readonly workdir: string;
  /** Beside the workspace; the attacker's target. Holds `secret.txt` and `dir/inner.txt`. */
  readonly outside: string;
  readonly sys: FsSyscalls;
  readonly users: UserWorkspaces;
  /** The safe layer bound to the Workdir. */
  readonly fs: WorkspaceFs;
  /** Absolute path of a Workdir-relative path, for the attacker's direct access. */
  at(relative: string): string;
  /** Fails the test if anything outside the workspace changed since setup. */
  assertOutsideUntouched(): void;
  cleanup(): Promise<void>;
  /** assertOutsideUntouched, then cleanup whether or not it failed: each test's afterEach. */
  finish(): Promise<void>;
}

export async function setupWorkspace(
  kind: ResolverKind,
  limits: Partial<WorkspaceLimits> = {},
): Promise<WorkspaceEnv> {
  const root = await freshDataRoot();
  const sys = createLibcSyscalls();
  const resolver = createPathResolver(sys, { kind });
  const users = createUserWorkspaces({ dataRoot: root.path, sys, resolver, limits });
  const fs = await users.ensureManagedWorkdir(UID, WORKDIR);
  const userDir = join(root.path, "users", UID);
  const workspace = join(userDir, "workspace");
  const outside = join(userDir, "outside");
  mkdirSync(join(outside, "dir"), { recursive: true });
  writeFileSync(join(outside, "secret.txt"), SECRET);
  writeFileSync(join(outside, "dir", "inner.txt"), SECRET);
  const before = snapshot(outside);
  const workdir = join(workspace, WORKDIR);
  const assertOutsideUntouched = () => {
    const after = snapshot(outside);
    if (JSON.stringify(after) !== JSON.stringify(before)) {
      throw new Error(
        `outside/ changed:\nbefore ${JSON.stringify(before)}\nafter  ${JSON.stringify(after)}`,
      );
    }
  };
  const cleanup = async () => {
    fs.close();
    await root.remove();
  };
  return {
    kind,
    dataRoot: root.path,
    userDir,
    workspace,
    workdir,
    outside,
    sys,
    users,
    fs,
    at: (relative) => join(workdir, relative),
    assertOutsideUntouched,
    cleanup,
    finish: () => checkThenCleanup(assertOutsideUntouched, cleanup),
  };
}

/** Every entry below `dir`: kind, mode, and content hash or link target. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = join(dir, rel, name);
      const key = rel === "" ? name : `${rel}/${name}`;
      const st = lstatSync(path);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) out[key] = `link ${readlinkSync(path)}`;
      else if (st.isDirectory()) {
        out[key] = `dir ${mode}`;
        walk(key);
      } else if (st.isFile()) {
        out[key] = `file ${mode} ${createHash("sha256").update(readFileSync(path)).digest("hex")}`;
      } else out[key] = `special ${mode}`;
    }
  };
  walk("");
  return out;
}

/**
 * Runs `fn`, expects it to throw a WorkcellError with `code` (and `reason` when given), and
 * returns the error for more checks.
 */
export async function expectCode(
  fn: () => unknown,
  code: string,
  reason?: string,
): Promise<WorkcellError> {
  let thrown: unknown;
  try {
    await fn();
  } catch (err) {
    thrown = err;
  }
  if (!(thrown instanceof WorkcellError)) {
    throw new Error(
      `expected WorkcellError ${code}, got ${thrown === undefined ? "success" : String(thrown)}`,
    );
  }
  if (thrown.code !== code || (reason !== undefined && thrown.details?.reason !== reason)) {
    throw new Error(
      `expected ${code}${reason ? `/${reason}` : ""}, got ${thrown.code}/${String(thrown.details?.reason)}: ${thrown.message}`,
    );
  }
  return thrown;
}

/** The permission bits of a path, not following a final symlink. */
export function mode(path: string): number {
  return lstatSync(path).mode & 0o7777;
}

/** Names in a directory, sorted: for "nothing else was created" checks. */
export function namesIn(dir: string): string[] {
  return readdirSync(dir).sort();
}

/** Resolves after `ms`; tests of "never blocks" race an operation against it. */
export function timeout(ms: number): Promise<"timeout"> {
  return new Promise((resolve) => setTimeout(() => resolve("timeout"), ms).unref());
}

export async function* chunks(parts: readonly (string | Uint8Array)[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield typeof part === "string" ? Buffer.from(part) : part;
}
