// Wire shapes of docs/api.md as the console uses them (the SDK's types, once it lands, are the
// same documents; fields may grow, so everything the console does not read is left out).

export type Project = {
  id: string;
  name: string | null;
  workdir_path: string;
  directory_mode: "managed" | "linked";
  implicit: boolean;
  created_at: string;
};

export type Thread = {
  thread_id: string;
  project_id: string;
  workdir_path: string;
  parent_thread_id: string | null;
  title: string | null;
  status: string;
  created_at: string;
  /** In the thread list: its runs waiting for a person's approval. */
  awaiting_approval?: number;
};

export type RunStatus =
  | "pending"
  | "running"
  | "awaiting_approval"
  | "succeeded"
  | "failed"
  | "cancelled";

/** A person's decision on a pending approval (docs/api.md "Approvals"). */
export type ApprovalDecision = {
  decision: "approve" | "deny";
  scope?: "once" | "run";
  note?: string;
};
export const TERMINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "cancelled"];

export type RunError = { code: string; message: string };

export type Run = {
  run_id: string;
  thread_id: string;
  parent_run_id: string | null;
  status: RunStatus;
  cancel_requested: boolean;
  error?: RunError;
  created_at: string;
  started_at?: string;
  finished_at?: string;
};

/** A run of GET /v1/threads/{id}/runs: with the message that started it. */
export type ThreadRun = Run & { input: string };

export type RunEvent = {
  seq: number;
  run_id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
};

export type RunChange = { path: string; change: "added" | "modified" | "deleted"; size: number };
export type RunChanges = { items: RunChange[]; truncated: boolean };

export type FileEntry = { name: string; type: "file" | "dir"; size: number; mtime: string };

export type Attachment = {
  file_id: string;
  file_name: string;
  content_type: string;
  size: number;
  status: "uploaded" | "parsed";
  path: string;
  original_path: string;
  uploaded_at: string;
};

export type Skill = { slug: string; kind: "builtin" | "shared" | "personal"; description: string };
export type SkillGrant = { slug: string; uid: string; projection: "refreshed" | "queued" };

export type CatalogueSkill = Skill & {
  content_hash: string;
  grant_count: number;
  updated_at?: string;
};

export type NodeInfo = {
  node_id: string;
  state: "active" | "quiesced" | "lost";
  heartbeat_at: string;
  sandbox_tiers: unknown;
  live_sandboxes: number;
  running_runs: number;
};

export type Checkpoint = {
  checkpoint_id: string;
  thread_id: string;
  run_id?: string;
  label?: string;
  source: "manual" | "run" | "restore";
  files: number;
  bytes: number;
  skipped: number;
  mode: "reflink" | "copy";
  created_at: string;
};
export type RestoreResult = { restored: Checkpoint; saved: Checkpoint };
