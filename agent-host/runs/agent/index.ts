// The agent of a run: loop, model clients, tools and system prompt. The run worker
// builds a ToolEnvironment (sandbox exec, UserWorkspace, Workdir, sub-agent spawner),
// picks a ModelClient and calls runAgentLoop; see README.md next to this file.

export type {
  AgentEvent,
  AgentEventType,
  EmitFn,
  RunError,
  SubagentCompletedEvent,
  SubagentStartedEvent,
} from "./agent-event.ts";
export * from "./agent-limits.ts";
export type {
  AssistantMessage,
  ChatMessage,
  SystemMessage,
  TokenUsage,
  ToolCall,
  ToolMessage,
  UserMessage,
} from "./chat-message.ts";
export type {
  FinishReason,
  ModelClient,
  ModelFailure,
  ModelFailureKind,
  ModelRequest,
  ModelResult,
  ModelTurn,
  ToolSpec,
} from "./model-client.ts";
export {
  createModelClient,
  type ModelConfig,
  type ModelConfigInput,
  modelConfigSchema,
} from "./model-config.ts";
export {
  createOpenAiCompatibleClient,
  DEFAULT_OPENAI_COMPATIBLE_CONFIG,
  type OpenAiCompatibleConfig,
  type OpenAiCompatibleDeps,
} from "./openai-compatible-client.ts";
export { type AgentLoopInput, type AgentLoopResult, runAgentLoop } from "./run-agent-loop.ts";
export type {
  SandboxExec,
  SandboxExecOptions,
  SandboxExecResult,
  SandboxExecStatus,
} from "./sandbox-exec.ts";
export {
  createScriptedModelClient,
  type ScriptedModelClient,
  type ScriptedStep,
  type ScriptedToolCall,
} from "./scripted-model-client.ts";
export { createShellModelClient, SHELL_MODEL_NAME } from "./shell-model-client.ts";
export type { SubagentOutcome, SubagentRequest, SubagentSpawner } from "./subagent-spawner.ts";
export { buildSystemPrompt, type SystemPromptInput } from "./system-prompt.ts";
export type { Tool, ToolContext, ToolEnvironment, ToolResult } from "./tool.ts";
export { type AgentToolsOptions, createAgentTools } from "./tools/agent-tools.ts";
export * from "./tools/bash-tool.ts";
export * from "./tools/list-dir-tool.ts";
export * from "./tools/read-file-tool.ts";
export * from "./tools/spawn-subagent-tool.ts";
export * from "./tools/write-file-tool.ts";
