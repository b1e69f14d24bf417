import type { UserWorkspaces } from "../../workspace/user-workspaces.ts";
import type { DataPlaneLimits } from "../data-plane-limits.ts";

/** What the route modules need: the file layer and the resolved limits. */
export interface RouteDeps {
  readonly userWorkspaces: UserWorkspaces;
  readonly limits: DataPlaneLimits;
}
