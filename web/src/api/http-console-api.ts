import type { ConsoleApi } from "./console-api.ts";
import { createTransport } from "./http-transport.ts";
import { putWithProgress } from "./put-with-progress.ts";
import { runEventStream } from "./run-event-stream.ts";
import type {
  Attachment,
  Project,
  Run,
  RunChanges,
  Skill,
  SkillGrant,
  Thread,
  ThreadRun,
} from "./types.ts";
import { createWorkdirFiles } from "./workdir-files.ts";

type Upload = { upload_url: string; headers: Record<string, string> };
type UploadGroup = { group_id: string; items: Array<Upload & { file_id: string; name: string }> };

const seg = encodeURIComponent;

/** ConsoleApi over Workcell's HTTP API (API.md), for one signed-in user. */
export function createHttpConsoleApi(p: {
  baseUrl: string;
  token: () => Promise<string>;
}): ConsoleApi {
  const t = createTransport(p);
  // One capability holder per thread, so components asking again reuse a live capability.
  const workdirs = new Map<string, ReturnType<typeof createWorkdirFiles>>();
  return {
    projects: {
      list: async (signal) =>
        (await t.json<{ items: Project[] }>("GET", "/v1/projects", undefined, signal)).items,
      create: (body) => t.json<Project>("POST", "/v1/projects", body),
    },
    threads: {
      list: async (signal) =>
        (await t.json<{ items: Thread[] }>("GET", "/v1/threads?limit=100", undefined, signal))
          .items,
      get: (id, signal) => t.json<Thread>("GET", `/v1/threads/${seg(id)}`, undefined, signal),
      create: (body) => t.json<Thread>("POST", "/v1/threads", body),
      delete: (id) => t.json<void>("DELETE", `/v1/threads/${seg(id)}`),
      runs: async (id, signal) =>
        (
          await t.json<{ items: ThreadRun[] }>(
            "GET",
            `/v1/threads/${seg(id)}/runs`,
            undefined,
            signal,
          )
        ).items,
      files(id) {
        let files = workdirs.get(id);
        if (files === undefined) {
          files = createWorkdirFiles(t, id);
          workdirs.set(id, files);
        }
        return files;
      },
    },
    runs: {
      create: (threadId, input) =>
        t.json<Run>("POST", `/v1/threads/${seg(threadId)}/runs`, { input }),
      get: (id, signal) => t.json<Run>("GET", `/v1/runs/${seg(id)}`, undefined, signal),
      cancel: async (id) => {
        await t.json<Run>("POST", `/v1/runs/${seg(id)}/cancel`, {});
      },
      changes: (id, signal) =>
        t.json<RunChanges>("GET", `/v1/runs/${seg(id)}/changes`, undefined, signal),
      events: (id, afterSeq, signal) => runEventStream(t, p.token, id, afterSeq, signal),
    },
    attachments: {
      list: async (threadId, signal) =>
        (
          await t.json<{ items: Attachment[] }>(
            "GET",
            `/v1/threads/${seg(threadId)}/attachments`,
            undefined,
            signal,
          )
        ).items,
      async upload(threadId, files, options) {
        const group = await t.json<UploadGroup>("POST", "/v1/attachments/uploads", {
          files: files.map((f) => ({
            name: f.name,
            size: f.size,
            content_type: f.type || "application/octet-stream",
          })),
        });
        const total = files.reduce((sum, f) => sum + f.size, 0);
        const loaded = files.map(() => 0);
        const report = () =>
          options.onProgress?.({ loaded: loaded.reduce((a, b) => a + b, 0), total });
        report();
        await Promise.all(
          group.items.map((item, i) =>
            putWithProgress(item.upload_url, files[i] as File, item.headers, (n) => {
              loaded[i] = n;
              report();
            }),
          ),
        );
        const confirmed = await t.json<{ items: Attachment[] }>(
          "POST",
          `/v1/threads/${seg(threadId)}/attachments/confirm`,
          {
            group_id: group.group_id,
            items: group.items.map((item) => ({ file_id: item.file_id, parse: options.parse })),
          },
        );
        return confirmed.items;
      },
      delete: (threadId, fileId) =>
        t.json<void>("DELETE", `/v1/threads/${seg(threadId)}/attachments/${seg(fileId)}`),
    },
    skills: {
      list: async (signal) =>
        (await t.json<{ items: Skill[] }>("GET", "/v1/skills", undefined, signal)).items,
      grant: (slug, uid) =>
        t.json<SkillGrant>("PUT", `/v1/admin/skills/${seg(slug)}/grants/${seg(uid)}`),
      revoke: (slug, uid) =>
        t.json<void>("DELETE", `/v1/admin/skills/${seg(slug)}/grants/${seg(uid)}`),
      async importArchive(slug, archive) {
        const upload = await t.json<Upload & { upload_id: string }>(
          "POST",
          "/v1/admin/skills/uploads",
          { size: archive.size },
        );
        await putWithProgress(upload.upload_url, archive, upload.headers ?? {}, () => {});
        return t.json<{ slug: string; status: string }>("POST", "/v1/admin/skills", {
          slug,
          upload_id: upload.upload_id,
        });
      },
    },
  };
}
