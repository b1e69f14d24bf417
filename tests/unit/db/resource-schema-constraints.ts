import { randomUUID } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import { expect, test } from "vitest";
import type { Db } from "../../../shared/db/client.ts";
import {
  idempotencyKeys,
  nextSandboxGeneration,
  nodes,
  projects,
  requests,
  sandboxes,
  skillGrants,
  skills,
} from "../../../shared/db/schema.ts";
import { CHECK, expectViolation, FOREIGN_KEY, UNIQUE } from "./expect-violation.ts";
import { managedPath, one, seedRun } from "./schema-seed.ts";

// Projects, idempotency keys, skills and sandboxes: uniqueness, path checks, generations.
export function defineResourceConstraintTests(getDb: () => Db): void {
  test("projects: managed paths are canonical and unique, linked paths may repeat", async () => {
    const db = getDb();
    const uid = `user-${randomUUID()}`;
    const path = managedPath();
    await db
      .insert(projects)
      .values({ uid, name: "a", workdirPath: path, directoryMode: "managed" });
    await expectViolation(
      db.insert(projects).values({ uid, name: "b", workdirPath: path, directoryMode: "managed" }),
      UNIQUE,
      "projects_managed_workdir_key",
    );
    // Another user's managed dir with the same relative path lives in another workspace.
    await db
      .insert(projects)
      .values({ uid: `${uid}-2`, name: "c", workdirPath: path, directoryMode: "managed" });
    for (const name of ["l1", "l2"]) {
      await db.insert(projects).values({ uid, name, workdirPath: path, directoryMode: "linked" });
      await db
        .insert(projects)
        .values({ uid, name, workdirPath: "code/app", directoryMode: "linked" });
    }
    await expectViolation(
      db
        .insert(projects)
        .values({ uid, name: "x", workdirPath: path.toUpperCase(), directoryMode: "managed" }),
      CHECK,
      "projects_managed_path_check",
    );
    for (const bad of ["", "/abs", "a/../b", "a//b", "a/", ".", "a/./b", "a\\b", "s3://x"]) {
      await expectViolation(
        db.insert(projects).values({ uid, name: "x", workdirPath: bad, directoryMode: "linked" }),
        CHECK,
        "projects_workdir_path_check",
      );
    }
    await expectViolation(
      db.execute(
        sql`insert into projects (uid, name, workdir_path, directory_mode) values (${uid}, 'x', 'code', 'copied')`,
      ),
      CHECK,
      "projects_directory_mode_check",
    );
  });

  test("a request lies in its message's thread and uid (no separate link to the thread)", async () => {
    const db = getDb();
    const { uid, thread, message } = await seedRun(db);
    const other = await seedRun(db);
    const base = { uid, threadId: thread.threadId, messageId: message.id, requestHash: "h" };
    const refused = [
      // Another uid's thread, with that uid: the message is not in it.
      { ...base, uid: other.uid, threadId: other.thread.threadId },
      // The uid's message, named with another uid's thread.
      { ...base, threadId: other.thread.threadId },
      // A thread that does not exist at all.
      { ...base, threadId: randomUUID() },
    ];
    for (const row of refused) {
      await expectViolation(db.insert(requests).values(row), FOREIGN_KEY, "requests_message_fk");
    }
    const stored = await db
      .select({ id: requests.id })
      .from(requests)
      .where(eq(requests.messageId, message.id));
    // Only seedRun's own request: none of the refused rows was written.
    expect(stored).toHaveLength(1);
  });

  test("idempotency keys are unique per uid; requests without a key never clash", async () => {
    const db = getDb();
    const { uid, thread, message } = await seedRun(db);
    const base = { uid, threadId: thread.threadId, messageId: message.id, requestHash: "h" };
    await db.insert(requests).values({ ...base, idempotencyKey: "k1" });
    await expectViolation(
      db.insert(requests).values({ ...base, idempotencyKey: "k1" }),
      UNIQUE,
      "requests_uid_idempotency_key_key",
    );
    await db.insert(requests).values({ ...base });
    await db.insert(requests).values({ ...base });
    // Only a request with a key can be replayed, so only it must carry the body's hash.
    await db.insert(requests).values({ ...base, requestHash: null });
    await expectViolation(
      db.insert(requests).values({ ...base, idempotencyKey: "k2", requestHash: null }),
      CHECK,
      "requests_hash_check",
    );
    expect(
      await db
        .select({ id: requests.id })
        .from(requests)
        .where(and(eq(requests.uid, uid), eq(requests.idempotencyKey, "k2"))),
    ).toEqual([]);

    await db
      .insert(idempotencyKeys)
      .values({ uid, key: "k1", method: "POST", path: "/v1/projects", requestHash: "h" });
    await expectViolation(
      db
        .insert(idempotencyKeys)
        .values({ uid, key: "k1", method: "POST", path: "/v1/projects", requestHash: "h" }),
      UNIQUE,
      "idempotency_keys_pkey",
    );
    await expectViolation(
      db
        .update(idempotencyKeys)
        .set({ responseStatus: 201 })
        .where(and(eq(idempotencyKeys.uid, uid), eq(idempotencyKeys.key, "k1"))),
      CHECK,
      "idempotency_keys_response_check",
    );
  });

  test("skills: grants cascade with the skill; slugs are one safe path component", async () => {
    const db = getDb();
    const slug = `s-${randomUUID()}`;
    await db.insert(skills).values({ slug, kind: "shared", contentHash: "c1" });
    await db.insert(skillGrants).values([
      { uid: "u1", slug },
      { uid: "u2", slug },
    ]);
    await expectViolation(
      db.insert(skillGrants).values({ uid: "u1", slug }),
      UNIQUE,
      "skill_grants_pkey",
    );
    await db.delete(skills).where(eq(skills.slug, slug));
    expect(await db.select().from(skillGrants).where(eq(skillGrants.slug, slug))).toEqual([]);
    for (const bad of ["..", ".hidden", "a/b", "-x", ""]) {
      await expectViolation(
        db.insert(skills).values({ slug: bad, kind: "shared", contentHash: "c" }),
        CHECK,
        "skills_slug_check",
      );
    }
  });

  test("sandboxes: generations only grow and a stale compare-and-set matches nothing", async () => {
    const db = getDb();
    const nodeId = `node-${randomUUID()}`;
    await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
    const sandboxId = randomUUID().replaceAll("-", "").slice(0, 12);
    const identity = {
      sandboxId,
      uid: "u",
      runtimeScopeId: randomUUID(),
      workdirPath: managedPath(),
      nodeId,
    };
    const first = one(
      await db.insert(sandboxes).values(identity).onConflictDoNothing().returning(),
    );
    expect(first.generation).toBeGreaterThanOrEqual(1);
    // A second first-create loses the race: no row, no new generation.
    expect(await db.insert(sandboxes).values(identity).onConflictDoNothing().returning()).toEqual(
      [],
    );

    const recreate = (observed: number) =>
      db
        .update(sandboxes)
        .set({ generation: nextSandboxGeneration(), state: "creating" })
        .where(and(eq(sandboxes.sandboxId, sandboxId), eq(sandboxes.generation, observed)))
        .returning({ generation: sandboxes.generation });
    const second = one(await recreate(first.generation));
    expect(second.generation).toBeGreaterThan(first.generation);
    expect(await recreate(first.generation)).toEqual([]);

    await expectViolation(
      db.insert(sandboxes).values({ ...identity, sandboxId: "NOT-HEX-1234" }),
      CHECK,
      "sandboxes_id_check",
    );
    await expectViolation(
      db.insert(sandboxes).values({ ...identity, sandboxId: "0123456789ab" }),
      UNIQUE,
      "sandboxes_uid_scope_key",
    );
    await expectViolation(
      db.insert(sandboxes).values({
        ...identity,
        sandboxId: "0123456789ab",
        runtimeScopeId: randomUUID(),
        nodeId: "ghost",
      }),
      FOREIGN_KEY,
      "sandboxes_node_fk",
    );
  });
}
