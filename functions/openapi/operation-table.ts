/**
 * Names, tags and request examples of the API's operations, in one table so that the
 * document reads the same everywhere (SDK method names follow these operationIds). A route
 * missing here still gets a derived operationId and a tag from its path (document-api.ts).
 */
export type OperationInfo = {
  readonly operationId: string;
  readonly tag: Tag;
  /** An example of the JSON request body (checked against its schema by Redocly). */
  readonly example?: unknown;
};

export const TAGS = {
  Health: "Liveness of the API and its dependencies (no token needed).",
  Projects: "Projects: a Workdir (managed, or linked to a directory of the UserWorkspace).",
  Threads: "Conversations, each with a Workdir.",
  Runs: "Agent runs: submit, follow the events, cancel, list changed files.",
  Files: "Capabilities for the data plane's Workdir files API.",
  Attachments: "Presigned uploads confirmed into a thread's Workdir.",
  Checkpoints: "Copies of a thread's Workdir: undo a run, restore, fork a thread.",
  Skills: "Skills visible to the caller.",
  Usage: "The caller's workspace usage and runs against their limits.",
  Tokens: "Personal access tokens (wct_…) for scripts and CI; managed with a sign-in token.",
  Network: "The caller's network policy and the connections of a run's sandbox.",
  Secrets: "Write-only secrets the egress proxy sends to their hosts; sandboxes hold placeholders.",
  Admin: "Operator calls (admin tokens only).",
} as const;
export type Tag = keyof typeof TAGS;

const PROJECT = "0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
const THREAD = "5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

export const OPERATIONS: Readonly<Record<string, OperationInfo>> = {
  "GET /v1/healthz": { operationId: "getHealth", tag: "Health" },
  "POST /v1/projects": {
    operationId: "createProject",
    tag: "Projects",
    example: { name: "reports", workdir_path: "work/reports" },
  },
  "GET /v1/projects": { operationId: "listProjects", tag: "Projects" },
  "GET /v1/projects/{id}": { operationId: "getProject", tag: "Projects" },
  "POST /v1/threads": {
    operationId: "createThread",
    tag: "Threads",
    example: { project_id: PROJECT, title: "Quarterly report" },
  },
  "GET /v1/threads": { operationId: "listThreads", tag: "Threads" },
  "GET /v1/threads/{thread_id}": { operationId: "getThread", tag: "Threads" },
  "DELETE /v1/threads/{thread_id}": { operationId: "deleteThread", tag: "Threads" },
  "GET /v1/threads/{thread_id}/runs": { operationId: "listThreadRuns", tag: "Threads" },
  "POST /v1/threads/{thread_id}/runs": {
    operationId: "createThreadRun",
    tag: "Runs",
    example: { input: "Summarize uploads/report.pdf into outputs/summary.md" },
  },
  "POST /v1/runs": {
    operationId: "createRun",
    tag: "Runs",
    example: { input: "echo hello > outputs/hello.txt", title: "Hello", agent: { max_steps: 20 } },
  },
  "GET /v1/runs/{run_id}": { operationId: "getRun", tag: "Runs" },
  "POST /v1/runs/{run_id}/cancel": { operationId: "cancelRun", tag: "Runs", example: {} },
  "GET /v1/runs/{run_id}/changes": { operationId: "listRunChanges", tag: "Runs" },
  "GET /v1/runs/{run_id}/events": { operationId: "streamRunEvents", tag: "Runs" },
  "POST /v1/runs/{run_id}/events/ticket": { operationId: "createRunEventsTicket", tag: "Runs" },
  "POST /v1/threads/{thread_id}/files/access": {
    operationId: "createFilesAccess",
    tag: "Files",
    example: { ops: ["read", "write"] },
  },
  "POST /v1/attachments/uploads": {
    operationId: "createAttachmentUploads",
    tag: "Attachments",
    example: { files: [{ name: "report.pdf", size: 48213, content_type: "application/pdf" }] },
  },
  "POST /v1/threads/{thread_id}/attachments/confirm": {
    operationId: "confirmAttachments",
    tag: "Attachments",
    example: {
      group_id: THREAD,
      items: [{ file_id: "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d", parse: true }],
    },
  },
  "GET /v1/threads/{thread_id}/attachments": {
    operationId: "listAttachments",
    tag: "Attachments",
  },
  "DELETE /v1/threads/{thread_id}/attachments/{file_id}": {
    operationId: "deleteAttachment",
    tag: "Attachments",
  },
  "POST /v1/threads/{thread_id}/checkpoints": {
    operationId: "createCheckpoint",
    tag: "Checkpoints",
    example: { label: "before the refactor" },
  },
  "GET /v1/threads/{thread_id}/checkpoints": { operationId: "listCheckpoints", tag: "Checkpoints" },
  "POST /v1/threads/{thread_id}/checkpoints/{checkpoint_id}/restore": {
    operationId: "restoreCheckpoint",
    tag: "Checkpoints",
  },
  "DELETE /v1/threads/{thread_id}/checkpoints/{checkpoint_id}": {
    operationId: "deleteCheckpoint",
    tag: "Checkpoints",
  },
  "POST /v1/threads/{thread_id}/fork": {
    operationId: "forkThread",
    tag: "Checkpoints",
    example: { checkpoint_id: "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d", title: "Another try" },
  },
  "GET /v1/skills": { operationId: "listSkills", tag: "Skills" },
  "GET /v1/admin/skills": { operationId: "listSkillCatalogue", tag: "Admin" },
  "POST /v1/admin/skills": {
    operationId: "importSkill",
    tag: "Admin",
    example: { slug: "pdf-tools", upload_id: "3f2e1d0c-9b8a-4f7e-8d6c-5b4a3f2e1d0c" },
  },
  "POST /v1/admin/skills/uploads": {
    operationId: "createSkillUpload",
    tag: "Admin",
    example: { size: 20480 },
  },
  "PUT /v1/admin/skills/{slug}/grants/{uid}": { operationId: "grantSkill", tag: "Admin" },
  "DELETE /v1/admin/skills/{slug}/grants/{uid}": { operationId: "revokeSkill", tag: "Admin" },
  "GET /v1/admin/nodes": { operationId: "listNodes", tag: "Admin" },
  "GET /v1/admin/runtime": { operationId: "listNodeRuntimes", tag: "Admin" },
  "POST /v1/admin/nodes/{node_id}/quiesce": { operationId: "quiesceNode", tag: "Admin" },
  "POST /v1/admin/nodes/{node_id}/resume": { operationId: "resumeNode", tag: "Admin" },
  "GET /v1/usage": { operationId: "getUsage", tag: "Usage" },
  "POST /v1/tokens": {
    operationId: "createToken",
    tag: "Tokens",
    example: { name: "ci", scopes: ["runs", "files"], expires_in_days: 90 },
  },
  "GET /v1/tokens": { operationId: "listTokens", tag: "Tokens" },
  "DELETE /v1/tokens/{token_id}": { operationId: "revokeToken", tag: "Tokens" },
  "GET /v1/admin/users/{uid}/limits": { operationId: "getUserLimits", tag: "Admin" },
  "PUT /v1/admin/users/{uid}/limits": {
    operationId: "putUserLimits",
    tag: "Admin",
    example: { workspace_bytes: 21474836480, max_concurrent_runs: 2 },
  },
  "GET /v1/admin/users/{uid}/network": { operationId: "getUserNetwork", tag: "Admin" },
  "PUT /v1/admin/users/{uid}/network": {
    operationId: "putUserNetwork",
    tag: "Admin",
    example: { mode: "allowlist", allow: ["pypi.org", "files.pythonhosted.org", "*.github.com"] },
  },
  "GET /v1/network": { operationId: "getNetwork", tag: "Network" },
  "GET /v1/runs/{run_id}/network": { operationId: "listRunNetwork", tag: "Network" },
  "PUT /v1/secrets/{name}": {
    operationId: "putSecret",
    tag: "Secrets",
    example: {
      value: "ghp_example",
      hosts: ["api.github.com"],
      header: "Authorization",
      template: "Bearer {value}",
    },
  },
  "GET /v1/secrets": { operationId: "listSecrets", tag: "Secrets" },
  "DELETE /v1/secrets/{name}": { operationId: "deleteSecret", tag: "Secrets" },
  "GET /v1/runs/{run_id}/approvals": { operationId: "listApprovals", tag: "Runs" },
  "POST /v1/runs/{run_id}/approvals/{approval_id}": {
    operationId: "decideApproval",
    tag: "Runs",
    example: { decision: "approve", scope: "once", note: "checked the command" },
  },
  "GET /v1/admin/users/{uid}/approvals": { operationId: "getUserApprovals", tag: "Admin" },
  "PUT /v1/admin/users/{uid}/approvals": {
    operationId: "putUserApprovals",
    tag: "Admin",
    example: { tools: ["bash"], max_timeout_seconds: 86400 },
  },
};
