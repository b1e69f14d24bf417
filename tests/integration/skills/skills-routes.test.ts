import { chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { OpenAPIHono } from "@hono/zod-openapi";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type AgentHostSkills,
  createAgentHostSkills,
} from "../../../agent-host/skills/agent-host-skills.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import type { AppEnv } from "../../../functions/app-env.ts";
import { errorHandler } from "../../../functions/middleware/error-handler.ts";
import { requestContext } from "../../../functions/middleware/request-context.ts";
import { requireAdmin } from "../../../functions/middleware/require-admin.ts";
import { validationHook } from "../../../functions/middleware/validation-hook.ts";
import { registerSkillRoutes } from "../../../functions/routes/skills-routes.ts";
import { createS3SkillArchiveUploads } from "../../../functions/skills/skill-archive-uploads.ts";
import { createSqsSkillRefreshQueue } from "../../../functions/skills/skill-refresh-queue.ts";
import { parseQueueMessage } from "../../../shared/contracts/queue-message.ts";
import type { SkillsDataPlane } from "../../../shared/contracts/skills-data-plane.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { freshBucket, freshQueue, s3Client, sqsClient } from "../../support/aws.ts";
import { buildZip } from "./archive-builder.ts";
import { namesIn, type SkillsEnv, setupSkills, silentLogger } from "./skills-harness.ts";

const ADMIN = { "x-test-uid": "root-admin", "x-test-admin": "1" };
const alice = { "x-test-uid": "alice" };
const MANIFEST = "---\nname: pdf-tools\ndescription: PDF tools\n---\n";

describe("skills routes", () => {
  let env: SkillsEnv;
  let s3: S3Client;
  let sqs: SQSClient;
  let bucket: string;
  let queueUrl: string;
  let skills: AgentHostSkills;
  let dataPlane: SkillsDataPlane;
  let app: OpenAPIHono<AppEnv>;

  beforeEach(async () => {
    env = await setupSkills();
    s3 = s3Client();
    sqs = sqsClient();
    bucket = await freshBucket(s3);
    queueUrl = await freshQueue(sqs);
    const sys = createLibcSyscalls();
    skills = createAgentHostSkills({
      db: env.db,
      sys,
      dataRoot: env.dataRoot,
      logger: silentLogger,
      s3,
      uploadsBucket: bucket,
      workspaces: createUserWorkspaces({
        dataRoot: env.dataRoot,
        sys,
        resolver: createPathResolver(sys),
      }),
    });
    dataPlane = skills.dataPlane;
    app = buildApp(() => dataPlane);
  });

  afterEach(async () => {
    await env.cleanup();
  });

  function buildApp(currentDataPlane: () => SkillsDataPlane): OpenAPIHono<AppEnv> {
    const built = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
    built.use(requestContext(silentLogger, createWorkcellMetrics(new Registry())));
    built.onError(errorHandler());
    // Stands in for the authenticate middleware: the principal it would set.
    built.use("/v1/*", async (c, next) => {
      c.set("principal", {
        uid: c.req.header("x-test-uid") ?? "",
        admin: c.req.header("x-test-admin") === "1",
      });
      await next();
    });
    built.use("/v1/admin/*", requireAdmin());
    registerSkillRoutes(built, {
      db: env.db,
      logger: silentLogger,
      skillsDataPlane: {
        refreshProjection: (uid, signal) => currentDataPlane().refreshProjection(uid, signal),
        importSkill: (request, signal) => currentDataPlane().importSkill(request, signal),
        listPersonalSkills: (uid, signal) => currentDataPlane().listPersonalSkills(uid, signal),
      },
      skillUploads: createS3SkillArchiveUploads({ s3, bucket }),
      skillRefreshQueue: createSqsSkillRefreshQueue({ sqs, queueUrl }),
    });
    return built;
  }

  const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    app.request(path, {
      method,
      headers: {
        ...headers,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  async function upload(archive: Buffer): Promise<string> {
    const res = await call("POST", "/v1/admin/skills/uploads", ADMIN, { size: archive.length });
    expect(res.status).toBe(201);
    const body = (await res.json()) as {
      upload_id: string;
      upload_url: string;
      headers: Record<string, string>;
    };
    const put = await fetch(body.upload_url, {
      method: "PUT",
      headers: body.headers,
      body: archive,
    });
    expect(put.status).toBe(200);
    return body.upload_id;
  }

  async function receiveRefreshes(): Promise<string[]> {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
      }),
    );
    return (out.Messages ?? []).map((m) => {
      const parsed = parseQueueMessage(m.Body);
      if (!parsed.ok || parsed.value.type !== "skills.refresh")
        throw new Error(`unexpected message ${m.Body}`);
      return parsed.value.uid;
    });
  }

  it("upload, import, grant, list, update, revoke: the whole admin flow", async () => {
    // Admin only.
    expect((await call("POST", "/v1/admin/skills/uploads", alice, { size: 10 })).status).toBe(403);

    const first = await upload(
      buildZip([
        { name: "SKILL.md", data: MANIFEST },
        { name: "a.py", data: "print(1)\n" },
      ]),
    );
    const imported = await call("POST", "/v1/admin/skills", ADMIN, {
      slug: "pdf-tools",
      upload_id: first,
    });
    expect(imported.status).toBe(201);
    expect(await imported.json()).toMatchObject({
      slug: "pdf-tools",
      kind: "shared",
      description: "PDF tools",
      status: "installed",
      content_hash: expect.stringMatching(/^sha256:/),
      refreshes_queued: 0,
    });
    // The upload is consumed.
    await expect(
      s3.send(new HeadObjectCommand({ Bucket: bucket, Key: `skill-uploads/${first}` })),
    ).rejects.toThrow();

    const granted = await call("PUT", "/v1/admin/skills/pdf-tools/grants/alice", ADMIN);
    expect(granted.status).toBe(200);
    expect(await granted.json()).toEqual({
      slug: "pdf-tools",
      uid: "alice",
      projection: "refreshed",
    });
    expect(namesIn(env.projectionPath("alice"))).toEqual(["pdf-tools"]);

    // The catalogue (admin only): every skill with its version and grant count.
    expect((await call("GET", "/v1/admin/skills", alice)).status).toBe(403);
    const catalogue = await call("GET", "/v1/admin/skills", ADMIN);
    expect(catalogue.status).toBe(200);
    const { items } = (await catalogue.json()) as { items: Array<Record<string, unknown>> };
    expect(items.find((s) => s.slug === "pdf-tools")).toMatchObject({
      kind: "shared",
      description: "PDF tools",
      content_hash: expect.stringMatching(/^sha256:/),
      grant_count: 1,
      created_at: expect.any(String),
    });
    expect(items.map((s) => s.slug)).toEqual([...items.map((s) => s.slug)].sort());

    // Alice's personal skill, in her workspace.
    const workspace = join(env.dataRoot, "users", "alice", "workspace");
    mkdirSync(join(workspace, "agents", "skills", "my-notes"), { recursive: true });
    writeFileSync(
      join(workspace, "agents", "skills", "my-notes", "SKILL.md"),
      "---\ndescription: mine\n---\n",
    );
    mkdirSync(join(workspace, "agents", "skills", "no-manifest"));
    chownSync(workspace, 1000, 1000);
    const listed = await call("GET", "/v1/skills", alice);
    expect(listed.status).toBe(200);
    expect(await listed.json()).toEqual({
      items: [
        { slug: "pdf-tools", kind: "shared", description: "PDF tools" },
        { slug: "my-notes", kind: "personal", description: "mine" },
      ],
    });
    // Another user sees none of it.
    expect(await (await call("GET", "/v1/skills", { "x-test-uid": "bob" })).json()).toEqual({
      items: [],
    });

    // An update fans out a refresh to every grantee.
    const second = await upload(
      buildZip([
        { name: "SKILL.md", data: MANIFEST },
        { name: "a.py", data: "print(2)\n" },
      ]),
    );
    const updated = await call("POST", "/v1/admin/skills", ADMIN, {
      slug: "pdf-tools",
      upload_id: second,
    });
    expect(updated.status).toBe(200);
    expect(await updated.json()).toMatchObject({ status: "updated", refreshes_queued: 1 });
    expect(await receiveRefreshes()).toEqual(["alice"]);

    const revoked = await call("DELETE", "/v1/admin/skills/pdf-tools/grants/alice", ADMIN);
    expect(revoked.status).toBe(204);
    expect(namesIn(env.projectionPath("alice"))).toEqual([]);
    expect(await (await call("GET", "/v1/skills", alice)).json()).toEqual({
      items: [{ slug: "my-notes", kind: "personal", description: "mine" }],
    });
    // Idempotent.
    expect((await call("DELETE", "/v1/admin/skills/pdf-tools/grants/alice", ADMIN)).status).toBe(
      204,
    );
  });

  it("grants to a uid that is not a plain name, through an encoded path segment", async () => {
    await env.install("hello", { "SKILL.md": "---\ndescription: hi\n---\n" }, "builtin");
    const uid = "oidc:tenant/user@example.com";
    const path = `/v1/admin/skills/hello/grants/${encodeURIComponent(uid)}`;
    const res = await call("PUT", path, ADMIN);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ slug: "hello", uid, projection: "refreshed" });
    expect(namesIn(env.projectionPath(uid))).toEqual(["hello"]);
    expect((await call("DELETE", path, ADMIN)).status).toBe(204);
    expect(namesIn(env.projectionPath(uid))).toEqual([]);
  });

  it("answers a refused archive with 422 and changes nothing", async () => {
    const before = namesIn(join(env.dataRoot, "skills", "sources"));
    const id = await upload(
      buildZip([
        { name: "SKILL.md", data: MANIFEST },
        { name: "passwd", data: "/etc/passwd", unixMode: 0o120777 },
      ]),
    );
    const res = await call("POST", "/v1/admin/skills", ADMIN, { slug: "pdf-tools", upload_id: id });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({
      error: {
        code: "unprocessable",
        details: { reason: "archive_rejected", problem: "link_entry", entry: "passwd" },
      },
    });
    expect(namesIn(join(env.dataRoot, "skills", "sources"))).toEqual(before);
    expect(await env.database.sql`select slug from skills`).toEqual([]);
  });

  it("refuses what is not allowed with the API's status codes", async () => {
    await env.install("hello", { "SKILL.md": "---\ndescription: hi\n---\n" }, "builtin");
    const id = await upload(buildZip([{ name: "SKILL.md", data: MANIFEST }]));
    const cases: [string, string, Record<string, string>, unknown, number][] = [
      ["POST", "/v1/admin/skills/uploads", ADMIN, { size: 65 * 1024 * 1024 }, 413],
      ["POST", "/v1/admin/skills/uploads", ADMIN, { size: 0 }, 400],
      ["POST", "/v1/admin/skills", ADMIN, { slug: "Bad_Slug", upload_id: id }, 400],
      ["POST", "/v1/admin/skills", ADMIN, { slug: "x", upload_id: crypto.randomUUID() }, 400],
      ["POST", "/v1/admin/skills", alice, { slug: "x", upload_id: id }, 403],
      ["POST", "/v1/admin/skills", ADMIN, { slug: "hello", upload_id: id }, 409],
      ["PUT", "/v1/admin/skills/nope/grants/alice", ADMIN, undefined, 404],
      ["PUT", "/v1/admin/skills/Bad..slug/grants/alice", ADMIN, undefined, 404],
      ["PUT", "/v1/admin/skills/hello/grants/alice", alice, undefined, 403],
      ["DELETE", "/v1/admin/skills/nope/grants/alice", ADMIN, undefined, 404],
      ["DELETE", "/v1/admin/skills/hello/grants/alice", alice, undefined, 403],
    ];
    for (const [method, path, headers, body, status] of cases) {
      const res = await call(method, path, headers, body);
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status);
    }
  });

  it("a revoke whose refresh cannot complete answers 503 and queues a refresh; retrying succeeds", async () => {
    await env.install("hello", { "SKILL.md": "---\ndescription: hi\n---\n" }, "builtin");
    expect((await call("PUT", "/v1/admin/skills/hello/grants/alice", ADMIN)).status).toBe(200);
    const real = dataPlane;
    dataPlane = {
      ...real,
      refreshProjection: async () => {
        throw new Error("agent-host unreachable");
      },
    };
    const res = await call("DELETE", "/v1/admin/skills/hello/grants/alice", ADMIN);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      error: { code: "unavailable", details: { reason: "projection_refresh_failed" } },
    });
    // The grant is gone from the catalogue, a refresh is queued, the projection still waits.
    expect(await env.database.sql`select * from skill_grants`).toEqual([]);
    expect(await receiveRefreshes()).toEqual(["alice"]);
    expect(namesIn(env.projectionPath("alice"))).toEqual(["hello"]);

    dataPlane = real;
    expect((await call("DELETE", "/v1/admin/skills/hello/grants/alice", ADMIN)).status).toBe(204);
    expect(namesIn(env.projectionPath("alice"))).toEqual([]);
  });
});
