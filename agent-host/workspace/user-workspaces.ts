import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import {
  isManagedWorkdirPath,
  normalizeWorkdirPath,
  uidDirname,
} from "../../shared/paths/index.ts";
import { lookupError } from "./errno-error.ts";
import { type FsContext, type FsContextOptions, fsContextOf, type Owner } from "./fs-context.ts";
import { ensureDirectory } from "./make-directory.ts";
import { AT_FDCWD, O_CLOEXEC, O_DIRECTORY, O_PATH, type SysResult } from "./syscalls.ts";
import { createWorkspaceFs, type WorkspaceFs } from "./workspace-fs.ts";

/** `<data-root>/users/<uid dirname>/workspace` (docs/architecture.md §2). */
export const USERS_DIR = "users";
export const WORKSPACE_DIR = "workspace";
/** Created inside a Workdir on first use, never ahead (docs/architecture.md §3). */
export const WORKDIR_UPLOADS_DIR = "uploads";
export const WORKDIR_OUTPUTS_DIR = "outputs";

export interface UserWorkspacesDeps extends FsContextOptions {
  /** The agent-host's data root (operator configuration, trusted; may itself be a symlink). */
  readonly dataRoot: string;
  /** Owner of the UserWorkspace and everything created in it (the sandbox user). */
  readonly owner?: Owner;
  /**
   * Creates a managed Workdir in place of mkdirat: a btrfs subvolume where the data root
   * has them, so its checkpoints are snapshots (docs/decisions/0190).
   */
  readonly makeWorkdir?: (parentFd: number, name: string) => SysResult<true>;
}

export interface OpenOptions {
  readonly signal?: AbortSignal;
}

/**
 * Finds and creates UserWorkspaces and Workdirs. Every returned WorkspaceFs owns a
 * descriptor: close it when done.
 */
export interface UserWorkspaces {
  /** The whole UserWorkspace of `uid`; `create` makes it (0700) when missing, else not_found. */
  openUserWorkspace(
    uid: string,
    options?: OpenOptions & { readonly create?: boolean },
  ): Promise<WorkspaceFs>;
  /**
   * Creates (idempotently) the UserWorkspace and the managed Workdir `projects/<uuid>`, each
   * directory 0700, and returns the Workdir. Only the Workdir itself: `uploads/` and
   * `outputs/` appear on first use. A path that is not `projects/<uuid>` is invalid_request.
   */
  ensureManagedWorkdir(
    uid: string,
    workdirPath: string,
    options?: OpenOptions,
  ): Promise<WorkspaceFs>;
  /**
   * Opens an existing Workdir (a linked project) without creating anything: missing →
   * not_found, a file → invalid_request, a symlink anywhere (including the UserWorkspace
   * root and its ancestors below the data root) → forbidden.
   */
  openExistingWorkdir(
    uid: string,
    workdirPath: string,
    options?: OpenOptions,
  ): Promise<WorkspaceFs>;
}

export function createUserWorkspaces(deps: UserWorkspacesDeps): UserWorkspaces {
  const ctx = fsContextOf(deps);
  // `users/` and `users/<dirname>/` belong to the agent-host, not to the sandbox user: only
  // the workspace directory itself (the bind-mount source) and what is inside it are chowned.
  const hostCtx: FsContext = { ...ctx, owner: undefined };

  /**
   * The data root is opened by path (it is configuration, and may be a symlink on purpose,
   * e.g. to an EFS mount); everything below it is opened no-follow from its descriptor, so a
   * symlinked `users/<dirname>` or `workspace` is refused, never followed.
   */
  function openDataRoot(): number {
    const opened = ctx.sys.openat(AT_FDCWD, deps.dataRoot, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (!opened.ok) {
      throw new WorkcellError(
        "unavailable",
        "The data root cannot be opened: check the agent-host's data root setting.",
        {
          details: { errno: opened.errno },
        },
      );
    }
    return opened.value;
  }

  function openWorkspaceFd(uid: string, create: boolean): number {
    const dirname = uidDirname(uid);
    const errCtx = { op: "open workspace", path: `${USERS_DIR}/${dirname}/${WORKSPACE_DIR}` };
    const dataRoot = openDataRoot();
    try {
      if (create) {
        const userDir = ensureDirectory(hostCtx, dataRoot, [USERS_DIR, dirname], errCtx, {
          finalFileCode: "invalid_request",
        });
        try {
          return ensureDirectory(ctx, userDir, [WORKSPACE_DIR], errCtx, {
            finalFileCode: "invalid_request",
          });
        } finally {
          ctx.sys.close(userDir);
        }
      }
      const names = [USERS_DIR, dirname, WORKSPACE_DIR];
      const opened = ctx.resolver.open(dataRoot, names, O_PATH | O_DIRECTORY);
      if (opened.ok) return opened.value;
      throw lookupError(ctx.sys, dataRoot, names, opened.errno, errCtx, {
        finalFileCode: "invalid_request",
      });
    } finally {
      ctx.sys.close(dataRoot);
    }
  }

  function bind(fd: number): WorkspaceFs {
    return createWorkspaceFs({
      sys: deps.sys,
      resolver: deps.resolver,
      rootFd: fd,
      limits: ctx.limits,
      ...(deps.owner === undefined ? {} : { owner: deps.owner }),
      fsync: ctx.fsync,
    });
  }

  return {
    async openUserWorkspace(uid, options = {}) {
      options.signal?.throwIfAborted();
      return bind(openWorkspaceFd(uid, options.create === true));
    },

    async ensureManagedWorkdir(uid, workdirPath, options = {}) {
      options.signal?.throwIfAborted();
      const path = normalizeWorkdirPath(workdirPath);
      if (!isManagedWorkdirPath(path)) {
        throw new WorkcellError("invalid_request", "A managed Workdir is 'projects/<uuid>'.", {
          details: { field: "workdir_path", rule: "managed_shape" },
        });
      }
      const workspace = openWorkspaceFd(uid, true);
      try {
        const errCtx = { op: "create workdir", path };
        return bind(
          ensureDirectory(ctx, workspace, path.split("/"), errCtx, {
            finalFileCode: "invalid_request",
            ...(deps.makeWorkdir === undefined ? {} : { makeLast: deps.makeWorkdir }),
          }),
        );
      } finally {
        ctx.sys.close(workspace);
      }
    },

    async openExistingWorkdir(uid, workdirPath, options = {}) {
      options.signal?.throwIfAborted();
      const path = normalizeWorkdirPath(workdirPath);
      const errCtx = { op: "open workdir", path };
      let workspace: number;
      try {
        workspace = openWorkspaceFd(uid, false);
      } catch (err) {
        if (err instanceof WorkcellError && err.code === "not_found") {
          throw domainError("workdir_missing", { details: { path } });
        }
        throw err;
      }
      try {
        const names = path.split("/");
        const opened = ctx.resolver.open(workspace, names, O_PATH | O_DIRECTORY);
        if (opened.ok) return bind(opened.value);
        const err = lookupError(ctx.sys, workspace, names, opened.errno, errCtx, {
          finalFileCode: "invalid_request",
        });
        if (err.code === "not_found") throw domainError("workdir_missing", { details: { path } });
        throw err;
      } finally {
        ctx.sys.close(workspace);
      }
    },
  };
}
