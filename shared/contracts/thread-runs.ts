import { z } from "@hono/zod-openapi";
import { runSchema } from "./run.ts";

/** Most runs `GET /v1/threads/{thread_id}/runs` returns (the newest ones). */
export const MAX_THREAD_RUNS = 200;

export const threadRunSchema = runSchema
  .extend({ input: z.string().describe("The user's message that started the run, as sent.") })
  .openapi("ThreadRun")
  .describe("A run of the thread with the message that started it.");

export const threadRunListSchema = z
  .object({
    items: z.array(threadRunSchema).describe("Oldest first."),
    truncated: z
      .boolean()
      .describe(`True when older runs exist beyond the newest ${MAX_THREAD_RUNS}.`),
  })
  .openapi("ThreadRunList")
  .describe("A thread's conversation history: its runs with their inputs.");

export type ThreadRun = z.infer<typeof threadRunSchema>;
