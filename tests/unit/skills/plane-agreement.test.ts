// The control plane and the agent-host share no runtime module outside shared/, so two
// skills rules exist in both: the uid's grant lock and the slug rule. They must agree.
import { PgDialect } from "drizzle-orm/pg-core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { grantLockKey as agentHostKey } from "../../../agent-host/skills/skill-locks.ts";
import { isSkillSlug, SKILL_SLUG_RULE } from "../../../agent-host/skills/skill-slug.ts";
import {
  SHARED_SKILL_SLUG_RULE,
  sharedSkillSlugSchema,
} from "../../../functions/skills/skill-admin-contracts.ts";
import { grantLockKey as controlPlaneKey } from "../../../functions/skills/skill-lock-keys.ts";
import { SKILL_SLUG_PATTERN } from "../../../shared/contracts/skill.ts";

const dialect = new PgDialect();

describe("skills rules shared by both planes", () => {
  it("render the same grant lock for any uid", () => {
    fc.assert(
      fc.property(fc.string(), (uid) => {
        expect(dialect.sqlToQuery(controlPlaneKey(uid))).toEqual(
          dialect.sqlToQuery(agentHostKey(uid)),
        );
      }),
    );
  });

  it("accept the same slugs, all of them valid for the shared contract", () => {
    expect(SHARED_SKILL_SLUG_RULE.source).toBe(SKILL_SLUG_RULE.source);
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[a-z0-9-]{1,20}$/)), (slug) => {
        expect(sharedSkillSlugSchema.safeParse(slug).success).toBe(isSkillSlug(slug));
        if (isSkillSlug(slug)) expect(SKILL_SLUG_PATTERN.test(slug)).toBe(true);
      }),
    );
    for (const bad of ["", "-a", "a-", "a--b", "A", "a_b", "a.b", "..", ".wc-skill-tmp-x"]) {
      expect(isSkillSlug(bad), bad).toBe(false);
    }
  });
});
