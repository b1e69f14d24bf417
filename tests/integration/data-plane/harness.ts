import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  createDataPlaneApp,
  type DataPlaneLimits,
  type DataPlaneServer,
  startDataPlaneServer,
} from "../../../agent-host/data-plane/index.ts";
import { createAccountingQuota } from "../../../agent-host/quota/workspace-quota.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type ResolverKind,
  type UserWorkspaces,
  type WorkspaceLimits,
} from "../../../agent-host/workspace/index.ts";
import {
  type CapabilityOp,
  type MintCapabilityOptions,
  mintCapability,
} from "../../../shared/capability/index.ts";
import type { RequestRateLimiter } from "../../../shared/limits/request-rate-limiter.ts";
import { checkThenCleanup } from "../../support/check-then-cleanup.ts";
import { freshDataRoot } from "../../support/data-root.ts";
import { testLogger } from "../../support/test-logger.ts";
import { newKeyPair, type TestKeyPair } from "../../unit/capability/capability-keys.ts";
import { snapshot } from "../workspace/harness.ts";

export const ALICE = "alice";
export const BOB = "bob";
export const ALICE_WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
/** Bob has a project of his own and one with the same id as Alice's. */
export const BOB_WORKDIR = "projects/5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
export const SECRET = "TOP SECRET: never to be read or changed through the data plane\n";
/** The sandbox user every workspace entry belongs to (docs/architecture.md §3). */
export const SANDBOX_OWNER = { uid: 1000, gid: 1000 } as const;
export const ALL_OPS: readonly CapabilityOp[] = ["read", "write", "delete"];

export interface DataPlaneEnv {
  readonly dataRoot: string;
  readonly keys: TestKeyPair;
  readonly users: UserWorkspaces;
  readonly server: DataPlaneServer;
  /** Alice's UserWorkspace and Workdir (absolute). */
  readonly aliceWorkspace: string;
  readonly workdir: string;
  /** Beside Alice's workspace: `users/alice/outside/{secret.txt,dir/inner.txt}`. */
  readonly outside: string;
  /** Bob's whole user directory: his workspace, his Workdirs, his secrets. */
  readonly bobUserDir: string;
  /** Absolute path of a path in Alice's Workdir, for the attacker's direct access. */
  at(relative: string): string;
  /** A capability for Alice's Workdir with the given ops (default read, write, delete). */
  token(overrides?: Partial<MintCapabilityOptions>): Promise<string>;
  /** An HTTP request to the real server; `token: null` sends no Authorization header. */
  request(method: string, pathAndQuery: string, init?: RequestOptions): Promise<Response>;
  /** Fails if anything outside Alice's Workdir's reach (her outside/, Bob's files) changed. */
  assertOutsideUntouched(): void;
  cleanup(): Promise<void>;
  /** assertOutsideUntouched, then cleanup whether or not it failed: each test's afterEach. */
  finish(): Promise<void>;
}

/** What `fetch` takes as a body (the DOM lib's BodyInit is not in this project's libs). */
export type RequestBody = NonNullable<RequestInit["body"]>;

export interface RequestOptions {
  readonly token?: string | null;
  readonly body?: RequestBody;
  readonly headers?: Record<string, string>;
}

export interface SetupOptions {
  readonly kind?: ResolverKind;
  readonly limits?: Partial<DataPlaneLimits>;
  readonly workspaceLimits?: Partial<WorkspaceLimits>;
  /** How long a quota measurement is reused (default DEFAULT_MAX_USAGE_AGE_MS). */
  readonly quotaMaxUsageAgeMs?: number;
  /** DATA_PLANE_CORS_ORIGINS; default [ALLOWED_ORIGIN]. */
  readonly allowedOrigins?: readonly string[] | "*";
  /** requests_per_minute (the agent-host passes one over its database); default none. */
  readonly rateLimiter?: RequestRateLimiter;
}

/** The browser origin the harness's data plane allows (CORS). */
export const ALLOWED_ORIGIN = "https://app.example";

/**
 * A fresh data root with two users, the real data-plane app served on a real loopback port,
 * and a key pair whose public half is the only thing the app trusts.
 */
export async function setupDataPlane(options: SetupOptions = {}): Promise<DataPlaneEnv> {
  const root = await freshDataRoot();
  const keys = await newKeyPair();
  const sys = createLibcSyscalls();
  const resolver = createPathResolver(sys, { kind: options.kind ?? "auto" });
  const users = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver,
    owner: SANDBOX_OWNER,
    ...(options.workspaceLimits === undefined ? {} : { limits: options.workspaceLimits }),
  });

  (await users.ensureManagedWorkdir(ALICE, ALICE_WORKDIR)).close();
  const aliceUserDir = join(root.path, "users", ALICE);
  const aliceWorkspace = join(aliceUserDir, "workspace");
  const workdir = join(aliceWorkspace, ALICE_WORKDIR);
  const outside = join(aliceUserDir, "outside");
  mkdirSync(join(outside, "dir"), { recursive: true });
  writeFileSync(join(outside, "secret.txt"), SECRET);
  writeFileSync(join(outside, "dir", "inner.txt"), SECRET);

  for (const path of [BOB_WORKDIR, ALICE_WORKDIR]) {
    (await users.ensureManagedWorkdir(BOB, path)).close();
  }
  const bobUserDir = join(root.path, "users", BOB);
  const bobWorkspace = join(bobUserDir, "workspace");
  writeFileSync(join(bobWorkspace, "secret.txt"), SECRET);
  for (const path of [BOB_WORKDIR, ALICE_WORKDIR]) {
    writeFileSync(join(bobWorkspace, path, "secret.txt"), SECRET);
    mkdirSync(join(bobWorkspace, path, "dir"));
    writeFileSync(join(bobWorkspace, path, "dir", "inner.txt"), SECRET);
  }

  const app = createDataPlaneApp({
    userWorkspaces: users,
    quota: createAccountingQuota({
      dataRoot: root.path,
      ...(options.quotaMaxUsageAgeMs === undefined
        ? {}
        : { maxUsageAgeMs: options.quotaMaxUsageAgeMs }),
    }),
    publicKeys: [keys.publicJwk],
    logger: testLogger(),
    allowedOrigins: options.allowedOrigins ?? [ALLOWED_ORIGIN],
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.rateLimiter === undefined ? {} : { rateLimiter: options.rateLimiter }),
  });
  const server = await startDataPlaneServer({ app, port: 0 });
  const before = { outside: snapshot(outside), bob: snapshot(bobUserDir) };
  const token = async (overrides: Partial<MintCapabilityOptions> = {}): Promise<string> => {
    const minted = await mintCapability({
      privateKey: keys.privateJwk,
      uid: ALICE,
      workdirPath: ALICE_WORKDIR,
      ops: ALL_OPS,
      ...overrides,
    });
    return minted.token;
  };

  const assertOutsideUntouched = () => {
    const after = { outside: snapshot(outside), bob: snapshot(bobUserDir) };
    if (JSON.stringify(after) !== JSON.stringify(before)) {
      throw new Error(
        `files outside Alice's Workdir changed:\nbefore ${JSON.stringify(before)}\nafter  ${JSON.stringify(after)}`,
      );
    }
  };
  const cleanup = async () => {
    await server.close();
    await root.remove();
  };

  return {
    dataRoot: root.path,
    keys,
    users,
    server,
    aliceWorkspace,
    workdir,
    outside,
    bobUserDir,
    at: (relative) => join(workdir, relative),
    token,
    async request(method, pathAndQuery, init = {}) {
      const bearer = init.token === undefined ? await token() : init.token;
      const headers: Record<string, string> = { ...init.headers };
      if (bearer !== null) headers.Authorization = `Bearer ${bearer}`;
      const body = init.body;
      return fetch(`${server.url}${pathAndQuery}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
      } as RequestInit);
    },
    assertOutsideUntouched,
    cleanup,
    finish: () => checkThenCleanup(assertOutsideUntouched, cleanup),
  };
}

/** `?path=` with the value percent-encoded as a browser would. */
export function q(path: string): string {
  return `path=${encodeURIComponent(path)}`;
}

/** The error body's code and reason, for one-line assertions. */
export async function errorOf(
  response: Response,
): Promise<{ status: number; code: unknown; reason: unknown }> {
  const body = (await response.json()) as {
    error?: { code?: unknown; details?: { reason?: unknown } };
  };
  return { status: response.status, code: body.error?.code, reason: body.error?.details?.reason };
}
