import type { Logger } from "pino";
import type { RunError } from "../../../shared/db/schema.ts";
import { isTransientDatabaseError } from "../../../shared/db/transient-database-error.ts";
import { domainReasonOf } from "../../../shared/errors/domain-errors.ts";
import { isWorkcellError } from "../../../shared/errors/workcell-error.ts";
import { inSpan, type TraceContext, type Tracing } from "../../../shared/telemetry/tracing.ts";
import type { RunQuotaGate } from "../../quota/run-quota-gate.ts";
import { acquireRefusalError } from "../../sandbox/lifecycle/acquire-sandbox.ts";
import type { SandboxHandle } from "../../sandbox/sandbox-handle.ts";
import type { UserWorkspaces, WorkspaceFs } from "../../workspace/index.ts";
import { WORKDIR_OUTPUTS_DIR } from "../../workspace/index.ts";
import type { RunContext } from "./run-context.ts";
import type { RunSandboxes } from "./run-sandboxes.ts";
import type { SkillProjection } from "./skill-projection.ts";

export interface PrepareRunDeps {
  readonly userWorkspaces: UserWorkspaces;
  readonly skillProjection: SkillProjection;
  readonly sandboxes: RunSandboxes;
  /** Absent: no quota check (tests of the worker alone). */
  readonly quota?: RunQuotaGate;
  readonly logger: Logger;
  /** Each step below is a span, children of `trace` (the run's `run.prepare`). */
  readonly tracing: Tracing;
  readonly trace: TraceContext;
}

export type Preparation =
  | {
      readonly kind: "ready";
      readonly handle: SandboxHandle;
      readonly created: boolean;
      /** Projected skill slugs, for the system prompt. */
      readonly skills: readonly string[];
    }
  /** The run cannot start here or anywhere: it ends `failed` with this error. */
  | { readonly kind: "failed"; readonly error: RunError }
  /**
   * Nothing has executed and another try may work (this node is quiesced, the scope's
   * sandbox lives on another node, its create is busy elsewhere, Docker blipped): give
   * the run back.
   */
  | { readonly kind: "hand_back"; readonly reason: string };

/**
 * Everything before a root run executes, in the order docs/architecture.md §4.7 requires:
 *
 * 0. the uid's UserWorkspace quota: a workspace over it gets no run (`quota_exceeded`,
 *    before anything is created; docs/decisions/0050);
 * 1. the Workdir: created for a managed project (`projects/<uuid>`, idempotent), only
 *    checked for a linked one (a missing directory fails the run `workdir_missing`:
 *    a linked Workdir is the user's, and inventing it would hide a mistake);
 * 2. `outputs/` in the Workdir: the run is its first use (docs/decisions/0008); the run's
 *    file changes are recorded per command under the Execution Lease (change-batch/);
 * 3. the uid's skill projection, refreshed against the grants, unless the grant version
 *    read with the run's context is the one of the last ok refresh (decision 0075);
 * 4. the sandbox of the run's scope, acquired last, so it only ever starts on an
 *    existing Workdir and a current projection.
 *
 * 3 runs while 0-2 do (the projection is not in the UserWorkspace); 4 waits for both.
 *
 * Expected failures are values; an abort of `signal` rejects with its reason.
 */
export async function prepareRun(
  deps: PrepareRunDeps,
  context: RunContext,
  signal: AbortSignal,
): Promise<Preparation> {
  const { run } = context;
  const log = deps.logger;
  const step = <T>(name: string, fn: () => Promise<T>) =>
    inSpan(deps.tracing, name, { parent: deps.trace }, fn);

  async function quotaAndWorkdir(): Promise<Preparation | undefined> {
    if (deps.quota !== undefined) {
      const gate = deps.quota;
      try {
        await step("quota.check", () => gate.admit(run.uid, signal));
      } catch (error) {
        signal.throwIfAborted();
        // The database dropped the check's statements: nothing ran, back in line (issue 38).
        if (isTransientDatabaseError(error)) {
          log.warn({ err: error }, "database unavailable during the quota check; handing back");
          return { kind: "hand_back", reason: "database_unavailable" };
        }
        log.warn({ err: error }, "run refused by the workspace quota check");
        return failed(error, "quota_check_failed", "Your workspace usage could not be checked");
      }
    }

    let workdir: WorkspaceFs;
    try {
      workdir = await step("workdir.prepare", () =>
        context.directoryMode === "managed"
          ? deps.userWorkspaces.ensureManagedWorkdir(run.uid, context.workdirPath, { signal })
          : deps.userWorkspaces.openExistingWorkdir(run.uid, context.workdirPath, { signal }),
      );
    } catch (error) {
      signal.throwIfAborted();
      log.warn({ err: error, workdir_path: context.workdirPath }, "workdir not usable");
      return failed(error, "workdir_unavailable", "The Workdir could not be opened");
    }
    try {
      await workdir.ensureDir(WORKDIR_OUTPUTS_DIR, { signal });
    } catch (error) {
      signal.throwIfAborted();
      log.warn({ err: error }, "outputs/ could not be created");
      return failed(error, "workdir_unavailable", "outputs/ could not be created in the Workdir");
    } finally {
      workdir.close();
    }
    return undefined;
  }

  async function refreshSkills(): Promise<
    | { readonly ok: true; readonly skills: readonly string[] }
    | { readonly ok: false; readonly failure: Preparation }
  > {
    try {
      const outcome = await inSpan(
        deps.tracing,
        "skills.refresh",
        { parent: deps.trace },
        async (span) => {
          const out = await deps.skillProjection.refresh(run.uid, signal, {
            grantVersion: context.skillGrantVersion,
          });
          span.setAttribute("workcell.skills_skipped", out.skipped === true);
          return out;
        },
      );
      if (outcome.projected === null) {
        return skillsFailed(
          "Your skills could not be prepared for this run (the projection is busy or unreadable): retry the run.",
        );
      }
      // A partial refresh removed what failed (fail closed); the run goes on without it.
      if (!outcome.ok) log.warn({ projected: outcome.projected }, "skill projection is partial");
      return { ok: true, skills: outcome.projected };
    } catch (error) {
      signal.throwIfAborted();
      log.error({ err: error }, "skill projection refresh failed");
      return skillsFailed("Your skills could not be prepared for this run: retry the run.");
    }
  }

  // The skills projection (3) is not part of the UserWorkspace: it is refreshed while the
  // quota and the Workdir (0-2) are checked, and the sandbox (4) waits for both. Its
  // rejection (an abort) is observed at once and rethrown where it is awaited; it is
  // awaited on every path, so no refresh outlives the preparation.
  const skillsStep = refreshSkills();
  skillsStep.catch(() => {});
  let early: Preparation | undefined;
  try {
    early = await quotaAndWorkdir();
  } catch (error) {
    await skillsStep.catch(() => {});
    throw error;
  }
  if (early !== undefined) {
    await skillsStep.catch(() => {});
    return early;
  }
  const refreshed = await skillsStep;
  if (!refreshed.ok) return refreshed.failure;
  const skills = refreshed.skills;

  let acquired: Awaited<ReturnType<RunSandboxes["acquire"]>>;
  try {
    acquired = await inSpan(
      deps.tracing,
      "sandbox.acquire",
      { parent: deps.trace },
      async (span) => {
        const out = await deps.sandboxes.acquire(
          {
            uid: run.uid,
            runtimeScopeId: run.runtimeScopeId,
            workdirPath: context.workdirPath,
            ...(context.agent.sandbox === undefined ? {} : { tier: context.agent.sandbox }),
            ...(context.agent.file_view === undefined ? {} : { fileView: context.agent.file_view }),
            runId: run.runId,
            ...(run.originRequestId === null ? {} : { requestId: run.originRequestId }),
          },
          signal,
        );
        if (out.ok) {
          span.setAttributes({
            "workcell.sandbox_id": out.handle.sandboxId,
            "workcell.generation": out.handle.generation,
            "workcell.sandbox_created": out.created,
          });
        } else span.setAttribute("workcell.refusal", out.reason);
        return out;
      },
    );
  } catch (error) {
    signal.throwIfAborted();
    // Docker did not answer or could not be reached while the sandbox was looked up or
    // created (a blip): no command of this run has run, so another node, or this one
    // once the engine is back, can start it from scratch (issue 14 (5)); the hand-back
    // bound keeps a node whose engine stays gone from bouncing it for ever.
    if (domainReasonOf(error) === "sandbox_engine_unresponsive") {
      log.warn({ err: error }, "sandbox engine unavailable during acquire; handing the run back");
      return { kind: "hand_back", reason: "sandbox_engine_unavailable" };
    }
    // The database dropped the sandbox manager's statements (a PostgreSQL restart):
    // nothing of the run ran, so it goes back in line rather than failing (issue 38).
    if (isTransientDatabaseError(error)) {
      log.warn({ err: error }, "database unavailable during sandbox acquire; handing the run back");
      return { kind: "hand_back", reason: "database_unavailable" };
    }
    log.error({ err: error }, "sandbox acquire failed");
    return failed(error, "sandbox_unavailable", "The sandbox could not be started");
  }
  if (!acquired.ok) {
    // Busy (the sandbox lock stayed held: another acquirer is still deciding), quiesced
    // or elsewhere: nothing ran, another node or a later claim can start the run.
    if (
      acquired.reason === "node_quiesced" ||
      acquired.reason === "sandbox_on_other_node" ||
      acquired.reason === "sandbox_busy"
    ) {
      return { kind: "hand_back", reason: acquired.reason };
    }
    const error = acquireRefusalError(acquired);
    log.warn({ reason: acquired.reason }, "sandbox acquire refused");
    return { kind: "failed", error: { code: acquired.reason, message: error.message } };
  }
  return { kind: "ready", handle: acquired.handle, created: acquired.created, skills };
}

/** A refresh that left the run without its skills: it fails `skills_refresh_failed`. */
function skillsFailed(message: string): { readonly ok: false; readonly failure: Preparation } {
  return {
    ok: false,
    failure: { kind: "failed", error: { code: "skills_refresh_failed", message } },
  };
}

/**
 * A WorkcellError keeps its domain reason (or catalogue code) and its message, which are
 * written for users; anything else gets `fallbackCode` and a generic message, since a raw
 * error can carry host paths.
 */
function failed(error: unknown, fallbackCode: string, what: string): Preparation {
  if (isWorkcellError(error) && error.code !== "internal") {
    return {
      kind: "failed",
      error: { code: domainReasonOf(error) ?? error.code, message: error.message },
    };
  }
  return {
    kind: "failed",
    error: {
      code: fallbackCode,
      message: `${what}: retry the run; if it persists, report it to the operator.`,
    },
  };
}
