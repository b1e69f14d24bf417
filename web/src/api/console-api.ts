import type {
  CreatedPersonalToken,
  NetworkPolicy,
  NodeRuntimeData,
  PersonalTokenData,
  SecretData,
  TokenScope,
  UsageData,
  UserLimitsData,
  UserLimitsOverride,
  UserNetworkData,
} from "@workcell/sdk";
import type {
  ApprovalDecision,
  Attachment,
  CatalogueSkill,
  Checkpoint,
  FileEntry,
  NodeInfo,
  Project,
  RestoreResult,
  Run,
  RunChanges,
  RunEvent,
  Skill,
  SkillGrant,
  Thread,
  ThreadRun,
} from "./types.ts";

/** Upload progress of one attachment batch: bytes sent of the total. */
export type UploadProgress = { loaded: number; total: number };

/** A thread's Workdir files (through the data-plane capability, renewed before expiry). */
export interface WorkdirFiles {
  list(path: string, signal?: AbortSignal): Promise<FileEntry[]>;
  read(path: string, signal?: AbortSignal): Promise<Blob>;
  /** Never overwrites: an existing name is a ConsoleApiError with code `conflict`. */
  write(path: string, body: Blob, signal?: AbortSignal): Promise<void>;
  mkdir(path: string, signal?: AbortSignal): Promise<void>;
  delete(path: string, signal?: AbortSignal): Promise<void>;
}

/**
 * Everything the console asks of Workcell. One implementation (sdk-console-api.ts) is the
 * only place that talks HTTP, so components and tests of the UI do not depend on the
 * transport.
 */
export interface ConsoleApi {
  projects: {
    list(signal?: AbortSignal): Promise<Project[]>;
    create(body: { name?: string; workdir_path?: string }): Promise<Project>;
  };
  threads: {
    list(signal?: AbortSignal): Promise<Thread[]>;
    get(threadId: string, signal?: AbortSignal): Promise<Thread>;
    create(body: { project_id?: string; title?: string }): Promise<Thread>;
    delete(threadId: string): Promise<void>;
    runs(threadId: string, signal?: AbortSignal): Promise<ThreadRun[]>;
    files(threadId: string): WorkdirFiles;
  };
  runs: {
    create(threadId: string, input: string): Promise<Run>;
    get(runId: string, signal?: AbortSignal): Promise<Run>;
    cancel(runId: string): Promise<void>;
    /** Decides a pending approval of the run; 409 when it was decided already. */
    decide(runId: string, approvalId: string, decision: ApprovalDecision): Promise<void>;
    changes(runId: string, signal?: AbortSignal): Promise<RunChanges>;
    /** Every event after `afterSeq` (0: from the start), resuming after a dropped connection. */
    events(runId: string, afterSeq: number, signal: AbortSignal): AsyncIterable<RunEvent>;
  };
  attachments: {
    list(threadId: string, signal?: AbortSignal): Promise<Attachment[]>;
    upload(
      threadId: string,
      files: File[],
      options: { parse: boolean; onProgress?: (p: UploadProgress) => void },
    ): Promise<Attachment[]>;
    delete(threadId: string, fileId: string): Promise<void>;
  };
  /** Copies of a thread's Workdir (docs/api.md "Checkpoints"). */
  checkpoints: {
    list(threadId: string, signal?: AbortSignal): Promise<Checkpoint[]>;
    create(threadId: string, label?: string): Promise<Checkpoint>;
    restore(threadId: string, checkpointId: string): Promise<RestoreResult>;
    fork(threadId: string, checkpointId?: string): Promise<Thread>;
  };
  /** The signed-in user's workspace and runs against their limits (`GET /v1/usage`). */
  usage(signal?: AbortSignal): Promise<UsageData>;
  /** The signed-in user's personal access tokens (`/v1/tokens`). */
  tokens: {
    list(signal?: AbortSignal): Promise<PersonalTokenData[]>;
    create(
      name: string,
      options: { scopes: TokenScope[]; expiresInDays?: number },
    ): Promise<CreatedPersonalToken>;
    revoke(tokenId: string): Promise<void>;
  };
  /** The signed-in user's secrets (`/v1/secrets`): values go in, never come back. */
  secrets: {
    list(signal?: AbortSignal): Promise<SecretData[]>;
    set(
      name: string,
      value: string,
      options: { hosts: string[]; header?: string; template?: string },
    ): Promise<SecretData>;
    remove(name: string): Promise<void>;
  };
  /** Admin only; the server answers 403 otherwise. */
  admin: {
    catalogue(signal?: AbortSignal): Promise<CatalogueSkill[]>;
    nodes(signal?: AbortSignal): Promise<NodeInfo[]>;
    quiesce(nodeId: string): Promise<void>;
    resume(nodeId: string): Promise<void>;
    runtime(signal?: AbortSignal): Promise<NodeRuntimeData[]>;
    limits(uid: string, signal?: AbortSignal): Promise<UserLimitsData>;
    /** Replaces the user's overrides; a limit left out takes the default. */
    setLimits(uid: string, overrides: UserLimitsOverride): Promise<UserLimitsData>;
    /** The user's network ceiling (issue #34). */
    network(uid: string, signal?: AbortSignal): Promise<UserNetworkData>;
    setNetwork(uid: string, policy: NetworkPolicy): Promise<UserNetworkData>;
  };
  skills: {
    list(signal?: AbortSignal): Promise<Skill[]>;
    grant(slug: string, uid: string): Promise<SkillGrant>;
    revoke(slug: string, uid: string): Promise<void>;
    /** Upload an archive (zip or tar.gz) and register or update the shared skill `slug`. */
    importArchive(slug: string, archive: File): Promise<{ slug: string; status: string }>;
  };
}

/** An error the server answered (docs/api.md shape) or a transport failure (`code: "network"`). */
export class ConsoleApiError extends Error {
  override readonly name = "ConsoleApiError";
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}
