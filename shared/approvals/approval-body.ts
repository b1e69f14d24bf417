import type { ApprovalBody } from "../contracts/approval.ts";
import type { RunApprovalRow } from "../db/schema.ts";

/** An approval row as the API shows it (docs/api.md "Approvals"). */
export function approvalBody(row: RunApprovalRow): ApprovalBody {
  return {
    approval_id: row.approvalId,
    run_id: row.runId,
    kind: row.kind,
    status: row.status,
    ...(row.tool === null ? {} : { tool: row.tool }),
    ...(row.arguments === null ? {} : { arguments: row.arguments }),
    ...(row.host === null ? {} : { host: row.host }),
    ...(row.port === null ? {} : { port: row.port }),
    requested_at: row.requestedAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    ...(row.decidedAt === null ? {} : { decided_at: row.decidedAt.toISOString() }),
    ...(row.decidedBy === null ? {} : { decided_by: row.decidedBy }),
    ...(row.note === null ? {} : { note: row.note }),
    ...(row.scope === null ? {} : { scope: row.scope }),
  };
}
