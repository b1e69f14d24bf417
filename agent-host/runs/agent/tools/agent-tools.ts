import type { Tool } from "../tool.ts";
import { type BashToolOptions, createBashTool } from "./bash-tool.ts";
import { createListDirTool, type ListDirToolOptions } from "./list-dir-tool.ts";
import { createReadFileTool, type ReadFileToolOptions } from "./read-file-tool.ts";
import { createSpawnSubagentTool } from "./spawn-subagent-tool.ts";
import { createWriteFileTool, type WriteFileToolOptions } from "./write-file-tool.ts";

export interface AgentToolsOptions {
  readonly bash?: Partial<BashToolOptions>;
  readonly readFile?: Partial<ReadFileToolOptions>;
  readonly writeFile?: Partial<WriteFileToolOptions>;
  readonly listDir?: Partial<ListDirToolOptions>;
  /** Offer `spawn_subagent` (default true). Leave it out for runs that may not spawn. */
  readonly subagents?: boolean;
}

/** The standard tool set of a run, in the order the model sees them. */
export function createAgentTools(options: AgentToolsOptions = {}): Tool[] {
  const tools: Tool[] = [
    createBashTool(options.bash),
    createReadFileTool(options.readFile),
    createWriteFileTool(options.writeFile),
    createListDirTool(options.listDir),
  ];
  if (options.subagents !== false) tools.push(createSpawnSubagentTool());
  return tools;
}
