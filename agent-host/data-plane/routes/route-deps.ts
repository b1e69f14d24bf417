import type { WorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import type { WorkspaceQuotaAccounting } from "../../quota/workspace-quota.ts";
import type { UserWorkspaces } from "../../workspace/user-workspaces.ts";
import type { DataPlaneLimits } from "../data-plane-limits.ts";

/** What the route modules need: the file layer and the resolved limits. */
export interface RouteDeps {
  readonly userWorkspaces: UserWorkspaces;
  readonly limits: DataPlaneLimits;
  /** workcell_data_plane_bytes_total: file bytes written (`in`) and served (`out`). */
  readonly bytes: WorkcellMetrics["dataPlaneBytes"];
  /** UserWorkspace quotas; absent, writes are bounded by their own limits only. */
  readonly quota?: WorkspaceQuotaAccounting;
}
