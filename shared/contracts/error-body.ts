import { z } from "@hono/zod-openapi";
import { ERROR_CODES } from "../errors/error-catalogue.ts";

export const errorBodySchema = z
  .object({
    error: z
      .object({
        code: z
          .enum(ERROR_CODES)
          .describe("Machine-readable code; the HTTP status follows from it."),
        message: z.string().describe("Human-readable text that says how to fix the problem."),
        details: z
          .record(z.string(), z.unknown())
          .optional()
          .describe("Structured context, e.g. `reason`, `field`, `rule` or `issues`."),
      })
      .describe("What went wrong."),
  })
  .openapi("ErrorBody")
  .describe("The body of every error response.");

export type ErrorBodyContract = z.infer<typeof errorBodySchema>;
