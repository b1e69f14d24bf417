import type { WorkspaceQuotaAccounting } from "../../quota/workspace-quota.ts";
import type { UserWorkspaces } from "../../workspace/user-workspaces.ts";
import type { DataPlaneLimits } from "../data-plane-limits.ts";

/** What the route modules need: the file layer and the resolved limits. */
export interface RouteDeps {
  readonly userWorkspaces: UserWorkspaces;
  readonly limits: DataPlaneLimits;
  /** UserWorkspace quotas; absent, writes are bounded by their own limits only. */
  readonly quota?: WorkspaceQuotaAccounting;
}
