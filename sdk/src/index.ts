// The SDK's one entry, for Node 24 and browsers alike: web-standard fetch, streams,
// AbortSignal and FormData only (no node: import anywhere under src/).
export {
  Admin,
  type NetworkPolicy,
  type NodeData,
  type NodeRuntimeData,
  type UserLimits,
  type UserLimitsData,
  type UserLimitsOverride,
  type UserNetworkData,
} from "./admin.ts";
export {
  Approval,
  type ApprovalData,
  type ApprovalStatus,
  type DecideOptions,
  listApprovals,
} from "./approvals.ts";
export { type AttachmentData, Attachments, type AttachmentUpload } from "./attachments.ts";
export {
  type CheckpointData,
  Checkpoints,
  type ForkedThreadData,
  type RestoreResultData,
} from "./checkpoints.ts";
export * from "./errors.ts";
export type { components, paths } from "./generated/api.ts";
export {
  type RunEvent,
  type RunEventsOptions,
  type RunEventType,
  runEvents,
} from "./run-events.ts";
export {
  type AgentOptions,
  type CreateRunOptions,
  type NetworkRequestData,
  Run,
  type RunChange,
  type RunData,
  type RunStatus,
  Runs,
  TERMINAL_RUN_STATUSES,
} from "./runs.ts";
export { type SecretData, Secrets, type SetSecretOptions } from "./secrets.ts";
export {
  AdminSkills,
  type CatalogueSkill,
  type ImportedSkill,
  type SkillData,
  type SkillGrant,
  Skills,
} from "./skills.ts";
export { type FileData, type FileEntry, ThreadFiles, type UploadFile } from "./thread-files.ts";
export {
  type CreateThreadOptions,
  Thread,
  type ThreadData,
  type ThreadPage,
  Threads,
} from "./threads.ts";
export {
  type CreatedPersonalToken,
  type CreateTokenOptions,
  type PersonalTokenData,
  type TokenScope,
  Tokens,
} from "./tokens.ts";
export {
  type CallOptions,
  DEFAULT_BASE_URL,
  type TokenSource,
  type WorkcellOptions,
} from "./transport.ts";
export { type NetworkData, type UsageData, Workcell } from "./workcell.ts";
