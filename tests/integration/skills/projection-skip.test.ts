// The warm-turn skip of the projection refresh (docs/decisions/0075): a run passes the
// uid's grant version as it read it; the refresh is skipped only when that equals the
// version the last fully ok refresh of this process read under the grant lock. Every test
// here changes something the projection depends on and checks that the next run sees it.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ProjectionRefresher } from "../../../agent-host/skills/projection-refresher.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { skillGrantVersionSql } from "../../../shared/db/skill-grant-version.ts";
import { namesIn, type SkillsEnv, setupSkills, testSignal } from "./skills-harness.ts";

const ALICE = "alice";
const BOB = "bob";
const HELLO = { "SKILL.md": "---\ndescription: Says hello.\n---\n# hello v1\n" };
const HELLO_V2 = { "SKILL.md": "---\ndescription: Says hello.\n---\n# hello v2\n" };
const PDF = { "SKILL.md": "---\ndescription: PDF tools\n---\n" };

describe("skipping the projection refresh when nothing changed", () => {
  let env: SkillsEnv;
  /** Refreshes that got as far as the projection's flock (a skipped one never does). */
  let locked: string[];
  let onLocked: ((uid: string) => Promise<void>) | undefined;
  let refresher: ProjectionRefresher;

  beforeEach(async () => {
    env = await setupSkills();
    await env.install("hello", HELLO);
    await env.install("pdf-tools", PDF);
    locked = [];
    onLocked = undefined;
    refresher = env.refresher({
      hooks: {
        onLocked: async (uid) => {
          locked.push(uid);
          await onLocked?.(uid);
        },
      },
    });
  });

  afterEach(async () => {
    await env.cleanup();
  });

  const versionOf = async (uid: string) => {
    const [row] = await executeRows<{ v: string }>(
      env.db,
      sql`select ${skillGrantVersionSql(uid)} as v`,
    );
    if (row === undefined) throw new Error("no version row");
    return row.v;
  };
  /** What a run does: its context load reads the version, its preparation passes it. */
  const run = async (uid: string) =>
    refresher.refresh(uid, testSignal(), { grantVersion: await versionOf(uid) });
  const names = (uid: string) => namesIn(env.projectionPath(uid));

  /** Two runs: the first refreshes, the second is skipped (the warm turn). */
  async function warm(uid: string, expected: string[]) {
    expect(await run(uid)).toMatchObject({ ok: true, skipped: false, projected: expected });
    const before = locked.length;
    expect(await run(uid)).toMatchObject({ ok: true, skipped: true, projected: expected });
    expect(locked.length).toBe(before);
  }

  it("skips a warm run, and refreshes whenever no version is passed", async () => {
    await env.grant(ALICE, "hello");
    await warm(ALICE, ["hello"]);
    // A grant change's own refresh (no version) always runs.
    expect(await refresher.refresh(ALICE, testSignal())).toMatchObject({ skipped: false });
    // A version that is not the remembered one (older, or unknown) refreshes.
    expect(await refresher.refresh(ALICE, testSignal(), { grantVersion: "0:0" })).toMatchObject({
      skipped: false,
      projected: ["hello"],
    });
  });

  it("a revoked grant is removed by the next run", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await warm(ALICE, ["hello", "pdf-tools"]);
    await env.revoke(ALICE, "pdf-tools");
    expect(await run(ALICE)).toMatchObject({
      ok: true,
      skipped: false,
      projected: ["hello"],
      removed: ["pdf-tools"],
    });
    expect(names(ALICE)).toEqual(["hello"]);
    expect(await run(ALICE)).toMatchObject({ skipped: true, projected: ["hello"] });
  });

  it("a new grant is projected by the next run", async () => {
    await env.grant(ALICE, "hello");
    await warm(ALICE, ["hello"]);
    await env.grant(ALICE, "pdf-tools");
    expect(await run(ALICE)).toMatchObject({ skipped: false, projected: ["hello", "pdf-tools"] });
  });

  it("a changed skill's content is copied by the next run of every grantee", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(BOB, "hello");
    await warm(ALICE, ["hello"]);
    await warm(BOB, ["hello"]);
    const installed = await env.install("hello", HELLO_V2);
    expect(installed).toMatchObject({ ok: true, status: "updated" });
    for (const uid of [ALICE, BOB]) {
      expect(await run(uid)).toMatchObject({ skipped: false, copied: ["hello"] });
      expect(readFileSync(join(env.projectionPath(uid), "hello", "SKILL.md"), "utf8")).toBe(
        HELLO_V2["SKILL.md"],
      );
    }
  });

  it("a deleted skill (its grants cascade) is removed by the next run", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await warm(ALICE, ["hello", "pdf-tools"]);
    await env.db.execute(sql`delete from skills where slug = 'pdf-tools'`);
    expect(await run(ALICE)).toMatchObject({ skipped: false, projected: ["hello"] });
    expect(names(ALICE)).toEqual(["hello"]);
  });

  it("another user's grant changes leave this user's version, and skip, alone", async () => {
    await env.grant(ALICE, "hello");
    await warm(ALICE, ["hello"]);
    const alice = await versionOf(ALICE);
    const bob = await versionOf(BOB);
    await env.grant(BOB, "pdf-tools");
    await env.revoke(BOB, "pdf-tools");
    await env.grant(BOB, "hello");
    expect(await versionOf(ALICE)).toBe(alice);
    expect(await versionOf(BOB)).not.toBe(bob);
    expect(await run(ALICE)).toMatchObject({ skipped: true, projected: ["hello"] });
    expect(await run(BOB)).toMatchObject({ skipped: false, projected: ["hello"] });
    // A content change of a skill only Bob holds leaves Alice's version alone too.
    await env.install("pdf-tools", { "SKILL.md": "---\ndescription: PDF v2\n---\n" });
    expect(await versionOf(ALICE)).toBe(alice);
  });

  it("a revoke committed during a refresh, after its read, forces the next run to refresh", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await warm(ALICE, ["hello", "pdf-tools"]);
    // A source change makes the next run refresh. A revoke that does not wait for the grant lock (a write path that forgot it) commits
    // while the refresh holds the flock, after the refresh read the grants and version.
    onLocked = async () => {
      onLocked = undefined;
      await env.db.execute(
        sql`delete from skill_grants where uid = ${ALICE} and slug = 'pdf-tools'`,
      );
    };
    await env.db.execute(sql`update skills set source_version = 'bumped' where slug = 'hello'`);
    const during = await run(ALICE);
    // It projected what it read: the revoke came later.
    expect(during).toMatchObject({ ok: true, skipped: false, projected: ["hello", "pdf-tools"] });
    // The version it remembered is the one read under the lock, not the revoke's.
    expect(await run(ALICE)).toMatchObject({
      skipped: false,
      projected: ["hello"],
      removed: ["pdf-tools"],
    });
    expect(names(ALICE)).toEqual(["hello"]);
  });

  it("a revoke queued behind a refresh's grant lock is seen by the next run", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await warm(ALICE, ["hello", "pdf-tools"]);
    await env.grant(BOB, "hello");
    let revoking: Promise<void> | undefined;
    // The control plane's revoke (it takes the grant lock) starts while the refresh holds
    // it, and so commits just after the refresh's transaction ends.
    onLocked = async () => {
      onLocked = undefined;
      revoking = env.revoke(ALICE, "pdf-tools");
    };
    const during = await refresher.refresh(ALICE, testSignal());
    expect(during).toMatchObject({ ok: true, projected: ["hello", "pdf-tools"] });
    await revoking;
    expect(await run(ALICE)).toMatchObject({ skipped: false, projected: ["hello"] });
    expect(names(ALICE)).toEqual(["hello"]);
  });

  it("a refresh that was not fully ok is not remembered", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await warm(ALICE, ["hello", "pdf-tools"]);
    // The source goes missing behind the catalogue's back: nothing in the database moves.
    rmSync(env.sourcePath("pdf-tools"), { recursive: true, force: true });
    await env.db.execute(sql`update skills set source_version = 'gone' where slug = 'pdf-tools'`);
    const version = await versionOf(ALICE);
    expect(await run(ALICE)).toMatchObject({ ok: false, skipped: false, projected: ["hello"] });
    // Same version again: still not skipped, because the last refresh was not ok.
    expect(await versionOf(ALICE)).toBe(version);
    const before = locked.length;
    expect(await run(ALICE)).toMatchObject({ ok: false, skipped: false });
    expect(locked.length).toBe(before + 1);
  });

  it("a projection changed by someone else (another process) is refreshed by the next run", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await warm(ALICE, ["hello", "pdf-tools"]);
    // Another agent-host on the same volume, or an operator, removed an entry.
    rmSync(join(env.projectionPath(ALICE), "pdf-tools"), { recursive: true, force: true });
    expect(await run(ALICE)).toMatchObject({
      ok: true,
      skipped: false,
      projected: ["hello", "pdf-tools"],
      copied: ["pdf-tools"],
    });
    // Another refresher (another process) refreshing leaves this one's record stale: the
    // root it recorded moved, so it refreshes too rather than trust it.
    await env.revoke(ALICE, "pdf-tools");
    await env.refresher().refresh(ALICE, testSignal());
    await env.grant(ALICE, "pdf-tools");
    expect(await run(ALICE)).toMatchObject({ skipped: false, projected: ["hello", "pdf-tools"] });
  });

  it("the triggers bump exactly the uids whose projection can change", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(BOB, "pdf-tools");
    const read = async () => ({ alice: await versionOf(ALICE), bob: await versionOf(BOB) });
    let before = await read();
    // A grant moved from one uid to another bumps both.
    await env.db.execute(sql`update skill_grants set uid = ${BOB} where uid = ${ALICE}`);
    let after = await read();
    expect(after.alice).not.toBe(before.alice);
    expect(after.bob).not.toBe(before.bob);
    // A description edit changes nothing projected: no bump.
    before = after;
    await env.db.execute(sql`update skills set description = 'edited' where slug = 'hello'`);
    expect(await read()).toEqual(before);
    // The content hash of a skill Bob holds bumps Bob only.
    await env.grant(ALICE, "pdf-tools");
    before = await read();
    await env.db.execute(sql`update skills set content_hash = 'x' where slug = 'hello'`);
    after = await read();
    expect(after.alice).toBe(before.alice);
    expect(after.bob).not.toBe(before.bob);
    // TRUNCATE names no uid: it bumps everyone.
    before = after;
    await env.db.execute(sql`truncate skill_grants`);
    after = await read();
    expect(after.alice).not.toBe(before.alice);
    expect(after.bob).not.toBe(before.bob);
  });
});
