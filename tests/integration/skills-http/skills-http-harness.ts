import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import {
  createDataPlaneApp,
  type DataPlaneLimits,
  type DataPlaneServer,
  startDataPlaneServer,
} from "../../../agent-host/data-plane/index.ts";
import {
  type AgentHostSkills,
  createAgentHostSkills,
} from "../../../agent-host/skills/agent-host-skills.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type UserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createHttpSkillsDataPlane } from "../../../functions/skills/http-skills-data-plane.ts";
import {
  type MintCapabilityOptions,
  type MintServiceCapabilityOptions,
  mintCapability,
  mintServiceCapability,
} from "../../../shared/capability/index.ts";
import type { SkillsDataPlane } from "../../../shared/contracts/skills-data-plane.ts";
import { freshBucket, s3Client } from "../../support/aws.ts";
import { newKeyPair, type TestKeyPair } from "../../unit/capability/capability-keys.ts";
import { type SkillsEnv, setupSkills, silentLogger, writeTree } from "../skills/skills-harness.ts";

export const ALICE = "alice";
export const BOB = "bob";
export const ALICE_WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
/** The sandbox user every workspace entry belongs to (docs/architecture.md §3). */
const SANDBOX_OWNER = { uid: 1000, gid: 1000 } as const;

export interface SkillsHttpEnv {
  /** Postgres (fresh database), data root, grants and projections (tests/integration/skills). */
  readonly skillsEnv: SkillsEnv;
  readonly keys: TestKeyPair;
  readonly s3: S3Client;
  readonly bucket: string;
  readonly users: UserWorkspaces;
  /** The real agent-host skills (createAgentHostSkills) on this env's database and data root. */
  readonly skills: AgentHostSkills;
  /** The real data plane, served on a loopback port, with `skills` wired in. */
  readonly server: DataPlaneServer;
  /** functions/'s HTTP SkillsDataPlane against `server`, with a real minter. */
  readonly http: SkillsDataPlane;
  /** The same handlers in-process (createInProcessSkillsDataPlane), for comparisons. */
  readonly inProcess: SkillsDataPlane;
  /** Puts an archive where the admin's presigned PUT would; returns its key. */
  upload(archive: Buffer): Promise<string>;
  /** Writes files under `agents/skills/` of a user's UserWorkspace. */
  writePersonal(uid: string, tree: Parameters<typeof writeTree>[1]): string;
  serviceToken(overrides?: Partial<MintServiceCapabilityOptions>): Promise<string>;
  workdirToken(overrides?: Partial<MintCapabilityOptions>): Promise<string>;
  /** A JSON POST (or any method) to the real server; `token: null` sends no Authorization. */
  request(method: string, path: string, init?: RequestOptions): Promise<Response>;
  cleanup(): Promise<void>;
}

export interface RequestOptions {
  readonly token?: string | null;
  readonly body?: unknown;
  readonly rawBody?: string;
}

export interface SkillsHttpOptions {
  /** Serve the data plane without `skills` (503 on the skills routes). */
  readonly withoutSkills?: boolean;
  readonly limits?: Partial<DataPlaneLimits>;
}

/**
 * One agent-host as the split deployment runs it: a fresh Postgres database and data root,
 * an S3 bucket (fauxqs) for uploads, the real skills handlers, and the real data-plane app
 * on a real port; functions/'s HTTP client on the other side with a real minter. Nothing of
 * ours is a double.
 */
export async function setupSkillsHttp(options: SkillsHttpOptions = {}): Promise<SkillsHttpEnv> {
  const skillsEnv = await setupSkills();
  const keys = await newKeyPair();
  const s3 = s3Client();
  const bucket = await freshBucket(s3);
  const sys = createLibcSyscalls();
  const users = createUserWorkspaces({
    dataRoot: skillsEnv.dataRoot,
    sys,
    resolver: createPathResolver(sys),
    owner: SANDBOX_OWNER,
  });
  const skills = createAgentHostSkills({
    db: skillsEnv.db,
    sys,
    dataRoot: skillsEnv.dataRoot,
    logger: silentLogger,
    s3,
    uploadsBucket: bucket,
    workspaces: users,
  });
  const app = createDataPlaneApp({
    userWorkspaces: users,
    publicKeys: [keys.publicJwk],
    logger: silentLogger,
    ...(options.withoutSkills ? {} : { skills }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  });
  const server = await startDataPlaneServer({ app, port: 0 });
  const http = createHttpSkillsDataPlane({
    baseUrl: server.url,
    capabilities: createCapabilityMinter({ privateJwk: keys.privateJwk }),
  });

  return {
    skillsEnv,
    keys,
    s3,
    bucket,
    users,
    skills,
    server,
    http,
    inProcess: skills.dataPlane,
    async upload(archive) {
      const key = `skill-uploads/${crypto.randomUUID()}`;
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: archive }));
      return key;
    },
    writePersonal(uid, tree) {
      const dir = join(skillsEnv.dataRoot, "users", uid, "workspace", "agents", "skills");
      mkdirSync(dir, { recursive: true });
      writeTree(dir, tree);
      return dir;
    },
    async serviceToken(overrides = {}) {
      const minted = await mintServiceCapability({
        privateKey: keys.privateJwk,
        uid: ALICE,
        ops: ["skills.refresh"],
        ...overrides,
      });
      return minted.token;
    },
    async workdirToken(overrides = {}) {
      const minted = await mintCapability({
        privateKey: keys.privateJwk,
        uid: ALICE,
        workdirPath: ALICE_WORKDIR,
        ops: ["read", "write", "delete"],
        ...overrides,
      });
      return minted.token;
    },
    request(method, path, init = {}) {
      const headers: Record<string, string> = {};
      if (init.token !== undefined && init.token !== null) {
        headers.Authorization = `Bearer ${init.token}`;
      }
      const body =
        init.rawBody ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
      if (body !== undefined) headers["Content-Type"] = "application/json";
      return fetch(`${server.url}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
      });
    },
    async cleanup() {
      await server.close();
      await skillsEnv.cleanup();
    },
  };
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
