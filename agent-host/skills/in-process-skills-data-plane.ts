import type { SkillsDataPlane } from "../../shared/contracts/skills-data-plane.ts";
import type { SkillImportHandler } from "./import-handler.ts";
import type { PersonalSkills } from "./personal-skills.ts";
import type { SkillsRefreshHandler } from "./refresh-handler.ts";

export interface InProcessSkillsDataPlaneDeps {
  readonly refresh: SkillsRefreshHandler;
  readonly imports: SkillImportHandler;
  readonly personal: PersonalSkills;
}

/**
 * The control plane's SkillsDataPlane served by calling the agent-host handlers directly:
 * for the one-process local Workcell (and tests), where both planes share a process. The
 * split deployment reaches the same handlers through the data plane's internal routes.
 */
export function createInProcessSkillsDataPlane(
  deps: InProcessSkillsDataPlaneDeps,
): SkillsDataPlane {
  return {
    refreshProjection: (uid, signal) =>
      deps.refresh.handle({ type: "skills.refresh", uid }, signal),
    importSkill: (request, signal) => deps.imports.handle(request, signal),
    listPersonalSkills: (uid, signal) => deps.personal.list(uid, signal),
  };
}
