import { z } from "@hono/zod-openapi";
import { listOf } from "./common.ts";

export const MAX_SKILL_SLUG_CHARS = 128;
/**
 * A slug becomes a directory name in every projection: one path component that is
 * never `.` or `..` and starts with no dot or dash. Same rule as the database check.
 */
export const SKILL_SLUG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** builtin: shipped with agent-host; shared: uploaded by an admin; personal: in the UserWorkspace. */
export const SKILL_KINDS = ["builtin", "shared", "personal"] as const;

export const skillSlugSchema = z
  .string()
  .min(1)
  .max(MAX_SKILL_SLUG_CHARS)
  .regex(SKILL_SLUG_PATTERN)
  .describe(
    "Skill slug, e.g. `pdf-tools`: letters, digits, '.', '_' and '-', starting with a letter or digit.",
  );

export const skillSchema = z
  .object({
    slug: z.string().describe("Skill slug: its directory name."),
    kind: z.enum(SKILL_KINDS).describe("Where the skill comes from."),
    description: z.string().describe("What the skill does, from SKILL.md; may be empty."),
  })
  .openapi("Skill")
  .describe("A skill visible to the caller.");

export const skillListSchema = listOf(skillSchema).describe("The caller's visible skills.");

export type Skill = z.infer<typeof skillSchema>;
