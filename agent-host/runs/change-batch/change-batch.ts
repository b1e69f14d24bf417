import { z } from "zod";
import {
  CHANGE_BATCH_TOOLS,
  type ChangeBatchTool,
  MAX_BATCH_COMMAND_CHARS,
  RUN_CHANGE_KINDS,
} from "../../../shared/db/schema.ts";
import type { WorkdirChange } from "./workdir-changes.ts";

/** The file facts of one command run under its Execution Lease (docs/decisions/0014). */
export interface ChangeBatch {
  /** Chosen before the commit, so committing it again (repair) writes nothing twice. */
  readonly batchId: string;
  readonly runId: string;
  /** The execution tree's root run: its changes are the union of the tree's batches. */
  readonly rootRunId: string;
  readonly uid: string;
  /** Order of the command within the execution tree. */
  readonly seq: number;
  readonly workdirPath: string;
  readonly tool: ChangeBatchTool;
  /** What ran, cut to MAX_BATCH_COMMAND_CHARS. */
  readonly command: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly items: readonly WorkdirChange[];
  readonly truncated: boolean;
}

/** A command's text as a batch keeps it. */
export function batchCommandText(command: string): string {
  return command.length <= MAX_BATCH_COMMAND_CHARS
    ? command
    : command.slice(0, MAX_BATCH_COMMAND_CHARS);
}

/** The on-disk form of a repair record, checked when read back. */
export const changeBatchSchema = z.strictObject({
  batchId: z.uuid(),
  runId: z.uuid(),
  rootRunId: z.uuid(),
  uid: z.string().min(1),
  seq: z.number().int().nonnegative(),
  workdirPath: z.string(),
  tool: z.enum(CHANGE_BATCH_TOOLS),
  command: z.string().max(MAX_BATCH_COMMAND_CHARS),
  startedAt: z.iso.datetime({ offset: true }),
  finishedAt: z.iso.datetime({ offset: true }),
  items: z.array(
    z.strictObject({
      path: z.string().min(1),
      change: z.enum(RUN_CHANGE_KINDS),
      size: z.number().int().nonnegative().nullable(),
    }),
  ),
  truncated: z.boolean(),
});
