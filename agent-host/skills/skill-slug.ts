import { MAX_SKILL_SLUG_CHARS } from "../../shared/contracts/skill.ts";

/**
 * Slugs of builtin and shared skills (issue 7): lowercase words of letters and digits
 * joined by single hyphens. It is a strict subset of the shared contract's pattern and of
 * the database check (`skills_slug_check`), so every slug accepted here is valid there
 * too. A slug is a directory name in the source store and in every projection: it can
 * never be `.`, `..`, empty, contain `/`, or start with the dot of our temp names.
 *
 * functions/skills/skill-slug-rule.ts holds the same rule for the HTTP side (the planes
 * share no runtime module outside shared/); tests/unit/skills checks that they agree.
 */
export const SKILL_SLUG_RULE = /^[a-z0-9]+(-[a-z0-9]+)*$/;

export function isSkillSlug(value: string): boolean {
  return value.length <= MAX_SKILL_SLUG_CHARS && SKILL_SLUG_RULE.test(value);
}
