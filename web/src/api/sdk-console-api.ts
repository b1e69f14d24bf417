import { Workcell, WorkcellError } from "@workcell/sdk";
import { type ConsoleApi, ConsoleApiError, type WorkdirFiles } from "./console-api.ts";
import type {
  Attachment,
  CatalogueSkill,
  Checkpoint,
  NodeInfo,
  Project,
  RestoreResult,
  Run,
  RunEvent,
  Skill,
  Thread,
  ThreadRun,
} from "./types.ts";
import { xhrUploadFetch } from "./xhr-upload-fetch.ts";

/** The SDK's typed errors as the console shows them (code + the server's message). */
function mapped(error: unknown): unknown {
  if (error instanceof WorkcellError) {
    return new ConsoleApiError(error.code, error.message, error.status);
  }
  return error;
}

async function sdk<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw mapped(error);
  }
}

const opts = (signal?: AbortSignal) => (signal === undefined ? {} : { signal });

/** ConsoleApi over the Workcell SDK (sdk/): every request of the console goes through it. */
export function createSdkConsoleApi(p: {
  baseUrl: string;
  token: () => Promise<string>;
}): ConsoleApi {
  const workcell = new Workcell({ baseUrl: p.baseUrl, token: p.token });
  // One ThreadFiles per thread, so its capability is reused and renewed, not re-minted.
  const workdirs = new Map<string, WorkdirFiles>();
  const api = workcell.api;
  const call = <T>(
    send: () => Promise<{ data?: T; error?: unknown; response: Response }>,
  ): Promise<T> =>
    sdk(async () => {
      const result = await send();
      if (!result.response.ok) {
        const body = result.error as { error?: { code?: string; message?: string } } | undefined;
        throw new ConsoleApiError(
          body?.error?.code ?? `http_${result.response.status}`,
          body?.error?.message ?? result.response.statusText,
          result.response.status,
        );
      }
      return result.data as T;
    });

  function files(threadId: string): WorkdirFiles {
    let held = workdirs.get(threadId);
    if (held === undefined) {
      const threadFiles = workcell.threads.get(threadId).then((t) => t.files);
      held = {
        list: (path, signal) => sdk(async () => (await threadFiles).list(path, opts(signal))),
        read: (path, signal) =>
          sdk(
            async () =>
              new Blob([new Uint8Array(await (await threadFiles).readBytes(path, opts(signal)))]),
          ),
        write: (path, body, signal) =>
          sdk(async () => (await threadFiles).write(path, body, opts(signal))),
        mkdir: (path, signal) => sdk(async () => (await threadFiles).mkdir(path, opts(signal))),
        delete: (path, signal) => sdk(async () => (await threadFiles).delete(path, opts(signal))),
      };
      workdirs.set(threadId, held);
    }
    return held;
  }

  return {
    projects: {
      list: async (signal) =>
        (await call(() => api.GET("/v1/projects", { ...opts(signal) }))).items as Project[],
      create: (body) => call(() => api.POST("/v1/projects", { body })) as Promise<Project>,
    },
    threads: {
      list: (signal) =>
        sdk(async () =>
          (await workcell.threads.list({ limit: 100, ...opts(signal) })).items.map(
            (t) => t.data as Thread,
          ),
        ),
      get: (id, signal) => sdk(async () => (await workcell.threads.get(id, opts(signal))).data),
      create: (body) =>
        sdk(
          async () =>
            (
              await workcell.threads.create({
                ...(body.project_id === undefined ? {} : { projectId: body.project_id }),
                ...(body.title === undefined ? {} : { title: body.title }),
              })
            ).data as Thread,
        ),
      delete: (id) => sdk(() => workcell.threads.delete(id)),
      runs: async (id, signal) =>
        (
          await call(() =>
            api.GET("/v1/threads/{thread_id}/runs", {
              params: { path: { thread_id: id } },
              ...opts(signal),
            }),
          )
        ).items as ThreadRun[],
      files,
    },
    runs: {
      create: (threadId, input) =>
        sdk(async () => (await workcell.runs.create(input, { threadId })).data as Run),
      get: (id, signal) => sdk(async () => (await workcell.runs.get(id, opts(signal))).data as Run),
      cancel: (id) =>
        sdk(async () => {
          await (await workcell.runs.get(id)).cancel();
        }),
      changes: (id, signal) =>
        sdk(async () => (await workcell.runs.get(id, opts(signal))).changes(opts(signal))),
      decide: async (id, approvalId, decision) => {
        await call(() =>
          api.POST("/v1/runs/{run_id}/approvals/{approval_id}", {
            params: { path: { run_id: id, approval_id: approvalId } },
            body: decision,
          }),
        );
      },
      async *events(id, afterSeq, signal) {
        try {
          const run = await workcell.runs.get(id, { signal });
          for await (const event of run.events({ signal, after: afterSeq })) {
            yield event as unknown as RunEvent;
          }
        } catch (error) {
          throw mapped(error);
        }
      },
    },
    attachments: {
      list: (threadId, signal) =>
        sdk(async () => (await workcell.attachments.list(threadId, opts(signal))) as Attachment[]),
      upload: (threadId, picked, options) =>
        sdk(async () => {
          // A client of its own whose fetch reports the presigned PUTs' progress.
          const total = picked.reduce((sum, f) => sum + f.size, 0);
          const sent = new Map<Blob, number>();
          options.onProgress?.({ loaded: 0, total });
          const uploader = new Workcell({
            baseUrl: p.baseUrl,
            token: p.token,
            fetch: xhrUploadFetch((n, body) => {
              sent.set(body, n);
              options.onProgress?.({
                loaded: [...sent.values()].reduce((a, b) => a + b, 0),
                total,
              });
            }),
          });
          const files = picked.map((f) => ({
            name: f.name,
            data: f,
            contentType: f.type || "application/octet-stream",
          }));
          return (await uploader.attachments.upload(threadId, files, {
            parse: options.parse,
          })) as Attachment[];
        }),
      delete: (threadId, fileId) => sdk(() => workcell.attachments.delete(threadId, fileId)),
    },
    checkpoints: {
      list: (threadId, signal) =>
        sdk(async () => (await workcell.checkpoints.list(threadId, opts(signal))) as Checkpoint[]),
      create: (threadId, label) =>
        sdk(
          async () =>
            (await workcell.checkpoints.create(
              threadId,
              label === undefined ? {} : { label },
            )) as Checkpoint,
        ),
      restore: (threadId, checkpointId) =>
        sdk(
          async () => (await workcell.checkpoints.restore(threadId, checkpointId)) as RestoreResult,
        ),
      fork: (threadId, checkpointId) =>
        sdk(
          async () =>
            (await workcell.checkpoints.fork(
              threadId,
              checkpointId === undefined ? {} : { checkpointId },
            )) as Thread,
        ),
    },
    usage: (signal) => sdk(() => workcell.usage(opts(signal))),
    tokens: {
      list: (signal) => sdk(() => workcell.tokens.list(opts(signal))),
      create: (name, options) => sdk(() => workcell.tokens.create(name, options)),
      revoke: (tokenId) => sdk(() => workcell.tokens.revoke(tokenId)),
    },
    secrets: {
      list: (signal) => sdk(() => workcell.secrets.list(opts(signal))),
      set: (name, value, options) => sdk(() => workcell.secrets.set(name, value, options)),
      remove: (name) => sdk(() => workcell.secrets.delete(name)),
    },
    admin: {
      catalogue: (signal) =>
        sdk(async () => (await workcell.admin.skills.list(opts(signal))) as CatalogueSkill[]),
      nodes: (signal) => sdk(async () => (await workcell.admin.nodes(opts(signal))) as NodeInfo[]),
      quiesce: (nodeId) => sdk(() => workcell.admin.quiesceNode(nodeId)),
      resume: (nodeId) => sdk(() => workcell.admin.resumeNode(nodeId)),
      runtime: (signal) => sdk(() => workcell.admin.runtime(opts(signal))),
      limits: (uid, signal) => sdk(() => workcell.admin.limits(uid, opts(signal))),
      setLimits: (uid, overrides) => sdk(() => workcell.admin.setLimits(uid, overrides)),
      network: (uid, signal) => sdk(() => workcell.admin.network(uid, opts(signal))),
      setNetwork: (uid, policy) => sdk(() => workcell.admin.setNetwork(uid, policy)),
    },
    skills: {
      list: (signal) => sdk(async () => (await workcell.skills.list(opts(signal))) as Skill[]),
      grant: (slug, uid) => sdk(() => workcell.admin.skills.grant(slug, uid)),
      revoke: (slug, uid) => sdk(() => workcell.admin.skills.revoke(slug, uid)),
      importArchive: (slug, archive) => sdk(() => workcell.admin.skills.import(slug, archive)),
    },
  };
}
