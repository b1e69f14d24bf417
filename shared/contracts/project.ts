import { z } from "@hono/zod-openapi";
import { WorkcellError } from "../errors/workcell-error.ts";
import { normalizeWorkdirPath } from "../paths/normalize-workdir-path.ts";
import { listOf, timestampSchema, uuidSchema } from "./common.ts";

export const MAX_PROJECT_NAME_CHARS = 200;

export const DIRECTORY_MODES = ["managed", "linked"] as const;

/**
 * A Workdir path as a client sends it. The schema runs the full `normalizeWorkdirPath`
 * rules so a bad path is a 400 with the rule's message; the handler still calls
 * `normalizeWorkdirPath` to get the canonical form (the schema does not transform, so
 * the OpenAPI document shows a plain string). Length is bounded by the same rules
 * (MAX_WORKDIR_PATH_BYTES after trimming), so there is no separate `.max()` to disagree.
 */
export const workdirPathInputSchema = z
  .string()
  .superRefine((value, ctx) => {
    try {
      normalizeWorkdirPath(value);
    } catch (err) {
      if (!(err instanceof WorkcellError)) throw err;
      ctx.addIssue({ code: "custom", message: err.message, params: { ...err.details } });
    }
  })
  .describe(
    "A directory of your workspace, relative to its root (e.g. `code/app`): no leading '/', no '.' or '..' components, no '\\\\'. Paths under `projects/` must be `projects/<uuid>`.",
  );

export const projectCreateRequestSchema = z
  .object({
    name: z
      .string()
      .trim()
      .min(1)
      .max(MAX_PROJECT_NAME_CHARS)
      .optional()
      .describe("Display name of the project."),
    workdir_path: workdirPathInputSchema
      .optional()
      .describe(
        "Link the project to this existing directory of your workspace. Omit it to get a managed Workdir `projects/<uuid>`.",
      ),
  })
  .strict()
  .openapi("ProjectCreateRequest")
  .describe("Create a project.");

export const projectSchema = z
  .object({
    id: uuidSchema.describe("Project id."),
    name: z.string().describe("Display name; the server picks one when none was given."),
    workdir_path: z.string().describe("The project's Workdir, relative to the workspace root."),
    directory_mode: z
      .enum(DIRECTORY_MODES)
      .describe(
        "`managed`: created by the server under `projects/`; `linked`: an existing directory.",
      ),
    implicit: z
      .boolean()
      .describe("True when the server created the project for a thread that named none."),
    created_at: timestampSchema.describe("Creation time."),
  })
  .openapi("Project")
  .describe("A project: a Workdir that threads work in.");

export const projectListSchema = listOf(projectSchema).describe("The caller's projects.");

export type ProjectCreateRequest = z.infer<typeof projectCreateRequestSchema>;
export type Project = z.infer<typeof projectSchema>;
