import type { Hono } from "hono";
import {
  CHECKPOINT_HOST_PATH,
  type CheckpointHostRequest,
  checkpointHostRequestSchema,
} from "../../shared/contracts/checkpoint.ts";
import { checkpointView } from "../../shared/contracts/checkpoint-view.ts";
import { invalidRequestFromZod } from "../../shared/contracts/contract-result.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import { limitBody } from "../../shared/http/body-limit.ts";
import { isManagedWorkdirPath, normalizeWorkdirPath } from "../../shared/paths/index.ts";
import { requireOp } from "../data-plane/capability-auth.ts";
import type { DataPlaneEnv } from "../data-plane/data-plane-env.ts";
import type { UserWorkspaces } from "../workspace/user-workspaces.ts";
import type { Checkpoints } from "./checkpoints.ts";

export interface CheckpointHostRouteDeps {
  /** Without it (a node wired without checkpoints) the endpoint answers 503. */
  readonly checkpoints: Checkpoints | undefined;
  readonly userWorkspaces: Pick<UserWorkspaces, "ensureManagedWorkdir">;
  readonly maxJsonBodyBytes: number;
}

/**
 * `POST /internal/v1/checkpoints` (capability op `checkpoint`, which files/access never
 * grants): functions/ asks this node to take, restore or fork from a checkpoint of the
 * capability's Workdir. functions/ has already authorised the thread (its uid, not
 * deleted) and, for a restore or a fork of the current Workdir, refused while a run of its
 * project is active (docs/decisions/0154); a take waits for the Workdir's Execution Lease
 * instead (docs/decisions/0170). The
 * capability pins uid and Workdir, so a body naming another Workdir is 403, and a
 * checkpoint id of another uid or thread is 404 (the service looks it up by all three).
 */
export function registerCheckpointHostRoute(
  app: Hono<DataPlaneEnv>,
  deps: CheckpointHostRouteDeps,
): void {
  app.post(CHECKPOINT_HOST_PATH, limitBody(deps.maxJsonBodyBytes, "request body"), async (c) => {
    const claims = requireOp(c, "checkpoint");
    const service = deps.checkpoints;
    if (service === undefined) {
      throw new WorkcellError(
        "unavailable",
        "This agent-host keeps no checkpoints: wire `checkpoints` into its data plane.",
      );
    }
    const body = await requestBody(c.req.raw);
    if (normalizeWorkdirPath(body.workdir_path) !== claims.workdir_path) {
      throw new WorkcellError(
        "forbidden",
        "workdir_path is not the Workdir the capability was minted for.",
        {
          details: { field: "workdir_path", reason: "capability_scope" },
        },
      );
    }
    const target = { uid: claims.uid, threadId: body.thread_id, workdirPath: claims.workdir_path };
    const signal = c.req.raw.signal;
    if (body.action === "take") {
      const row = await service.takeUnderLease(
        target,
        { source: "manual", ...(body.label === undefined ? {} : { label: body.label }) },
        signal,
      );
      return c.json({ checkpoint: checkpointView(row) }, 201);
    }
    if (body.action === "restore") {
      const { restored, saved } = await service.restore(target, requiredId(body), signal);
      return c.json({ restored: checkpointView(restored), saved: checkpointView(saved) }, 200);
    }
    const forkPath = normalizeWorkdirPath(body.fork_workdir_path ?? "");
    if (!isManagedWorkdirPath(forkPath)) {
      throw new WorkcellError(
        "invalid_request",
        "fork_workdir_path must be a new managed Workdir, projects/<uuid>.",
      );
    }
    // An unknown checkpoint is refused before the new Workdir is made: nothing is created.
    if (
      body.checkpoint_id !== undefined &&
      (await service.find(target, body.checkpoint_id)) === undefined
    ) {
      throw new WorkcellError("not_found", "No such checkpoint.");
    }
    const made = await deps.userWorkspaces.ensureManagedWorkdir(claims.uid, forkPath, { signal });
    made.close();
    const stats = await service.fork(target, body.checkpoint_id, forkPath, signal);
    return c.json({ files: stats.files }, 201);
  });
}

async function requestBody(request: Request): Promise<CheckpointHostRequest> {
  let raw: unknown;
  try {
    raw = await request.json();
  } catch (err) {
    if (err instanceof WorkcellError) throw err; // the body limit
    throw new WorkcellError("invalid_request", "Send a JSON body.", {
      details: { reason: "malformed_json" },
    });
  }
  const parsed = checkpointHostRequestSchema.safeParse(raw);
  if (!parsed.success) throw invalidRequestFromZod(parsed.error);
  return parsed.data;
}

function requiredId(body: CheckpointHostRequest): string {
  if (body.checkpoint_id === undefined) {
    throw new WorkcellError("invalid_request", "checkpoint_id is required to restore.");
  }
  return body.checkpoint_id;
}
