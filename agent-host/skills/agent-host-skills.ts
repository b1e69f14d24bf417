import type { S3Client } from "@aws-sdk/client-s3";
import type { Logger } from "pino";
import type { SkillsDataPlane } from "../../shared/contracts/skills-data-plane.ts";
import type { Db } from "../../shared/db/client.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { FsSyscalls } from "../workspace/syscalls.ts";
import type { UserWorkspaces } from "../workspace/user-workspaces.ts";
import { type BuiltinRegistration, registerBuiltinSkills } from "./builtin-skills.ts";
import { createSkillImportHandler, type SkillImportHandler } from "./import-handler.ts";
import { createInProcessSkillsDataPlane } from "./in-process-skills-data-plane.ts";
import { createPersonalSkills, type PersonalSkills } from "./personal-skills.ts";
import {
  createProjectionRefresher,
  type ProjectionRefresher,
  type RefreshHooks,
} from "./projection-refresher.ts";
import { createSkillsRefreshHandler, type SkillsRefreshHandler } from "./refresh-handler.ts";
import { createSkillImporter, type SkillImporter } from "./skill-importer.ts";
import type { RefreshTimeouts, SkillLimits } from "./skill-limits.ts";
import { createSourceStore, type SourceStore } from "./source-store.ts";

export interface AgentHostSkillsDeps {
  readonly db: Db;
  readonly sys: FsSyscalls;
  /** DATA_ROOT: holds skills/sources and skills/projections. */
  readonly dataRoot: string;
  readonly logger: Logger;
  readonly s3: S3Client;
  /** The bucket skill archives are uploaded to (ATTACHMENTS_BUCKET). */
  readonly uploadsBucket: string;
  readonly workspaces: UserWorkspaces;
  readonly limits?: Partial<SkillLimits>;
  readonly timeouts?: Partial<RefreshTimeouts>;
  readonly builtinDir?: string;
  readonly hooks?: RefreshHooks;
  /** workcell_skill_refreshes_total{result}: every projection refresh (or skip), whoever asked. */
  readonly metrics?: Pick<WorkcellMetrics, "skillRefreshes">;
}

/** Everything the agent-host does with skills, wired once (agent-host/main.ts). */
export interface AgentHostSkills {
  /** The run worker calls `refresher.refresh(uid)` before acquiring a sandbox. */
  readonly refresher: ProjectionRefresher;
  readonly store: SourceStore;
  readonly importer: SkillImporter;
  /** For the data plane's internal refresh route and `skills.refresh` queue messages. */
  readonly refreshHandler: SkillsRefreshHandler;
  /** For the data plane's internal import route. */
  readonly importHandler: SkillImportHandler;
  readonly personal: PersonalSkills;
  /** The control plane's seam, served in-process (local one-process mode). */
  readonly dataPlane: SkillsDataPlane;
  /** Call once at start, before serving. */
  registerBuiltins(signal: AbortSignal): Promise<BuiltinRegistration[]>;
}

export function createAgentHostSkills(deps: AgentHostSkillsDeps): AgentHostSkills {
  const logger = deps.logger.child({ component: "skills" });
  const common = {
    db: deps.db,
    sys: deps.sys,
    dataRoot: deps.dataRoot,
    logger,
    ...(deps.limits ? { limits: deps.limits } : {}),
  };
  const refresher = countedRefresher(
    createProjectionRefresher({
      ...common,
      ...(deps.timeouts ? { timeouts: deps.timeouts } : {}),
      ...(deps.hooks ? { hooks: deps.hooks } : {}),
    }),
    deps.metrics,
  );
  const store = createSourceStore({
    ...common,
    ...(deps.timeouts?.advisoryLockTimeoutMs
      ? { advisoryLockTimeoutMs: deps.timeouts.advisoryLockTimeoutMs }
      : {}),
  });
  const importer = createSkillImporter({
    store,
    sys: deps.sys,
    ...(deps.limits ? { limits: deps.limits } : {}),
  });
  const refreshHandler = createSkillsRefreshHandler({ refresher });
  const importHandler = createSkillImportHandler({
    s3: deps.s3,
    bucket: deps.uploadsBucket,
    importer,
    ...(deps.limits ? { limits: deps.limits } : {}),
  });
  const personal = createPersonalSkills({
    workspaces: deps.workspaces,
    logger,
    ...(deps.limits ? { limits: deps.limits } : {}),
  });
  return {
    refresher,
    store,
    importer,
    refreshHandler,
    importHandler,
    personal,
    dataPlane: createInProcessSkillsDataPlane({
      refresh: refreshHandler,
      imports: importHandler,
      personal,
    }),
    registerBuiltins: (signal) =>
      registerBuiltinSkills(
        {
          store,
          sys: deps.sys,
          logger,
          ...(deps.builtinDir ? { builtinDir: deps.builtinDir } : {}),
          ...(deps.limits ? { limits: deps.limits } : {}),
        },
        signal,
      ),
  };
}

/**
 * The refresher, counting each outcome: ok, skipped (nothing changed since the last ok
 * refresh, decision 0075) or failed (a throw counts as failed, then propagates).
 */
function countedRefresher(
  refresher: ProjectionRefresher,
  metrics: Pick<WorkcellMetrics, "skillRefreshes"> | undefined,
): ProjectionRefresher {
  if (metrics === undefined) return refresher;
  return {
    async refresh(uid, signal, options) {
      let result = "failed";
      try {
        const outcome = await refresher.refresh(uid, signal, options);
        if (outcome.ok) result = outcome.skipped ? "skipped" : "ok";
        return outcome;
      } finally {
        metrics.skillRefreshes.inc({ result });
      }
    },
  };
}
