import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Label } from "radix-ui";
import { type FormEvent, useState } from "react";
import type { SkillGrant } from "../api/types.ts";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { AdminPage } from "./admin-page.tsx";
import { SkillCatalogue } from "./skill-catalogue.tsx";

/** The catalogue, grants and archive uploads (admin). */
export function AdminSkillsPage() {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const [slug, setSlug] = useState("hello");
  const [uid, setUid] = useState("");
  const [archiveSlug, setArchiveSlug] = useState("");
  const [archive, setArchive] = useState<File | undefined>(undefined);
  const grant = useMutation({
    mutationFn: async (kind: "grant" | "revoke"): Promise<SkillGrant | undefined> => {
      if (kind === "grant") return api.skills.grant(slug.trim(), uid.trim());
      await api.skills.revoke(slug.trim(), uid.trim());
      return undefined;
    },
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["skills"] });
      void queryClient.invalidateQueries({ queryKey: ["admin-catalogue"] });
    },
  });
  const upload = useMutation({
    mutationFn: () => api.skills.importArchive(archiveSlug.trim(), archive as File),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["admin-catalogue"] }),
  });

  const onGrant = (e: FormEvent) => {
    e.preventDefault();
    grant.mutate("grant");
  };
  return (
    <AdminPage title="Skills administration">
      <SkillCatalogue />
      <form className="card stack" onSubmit={onGrant} aria-labelledby="grant-title">
        <h3 id="grant-title">Grant a skill</h3>
        <Label.Root htmlFor="grant-slug">Skill</Label.Root>
        <input id="grant-slug" value={slug} onChange={(e) => setSlug(e.target.value)} required />
        <Label.Root htmlFor="grant-uid">User id</Label.Root>
        <input id="grant-uid" value={uid} onChange={(e) => setUid(e.target.value)} required />
        <div className="row">
          <button type="submit" className="primary" disabled={grant.isPending}>
            Grant
          </button>
          <button
            type="button"
            disabled={grant.isPending || uid.trim() === ""}
            onClick={() => grant.mutate("revoke")}
          >
            Revoke
          </button>
        </div>
        {grant.isSuccess && grant.variables === "grant" && grant.data !== undefined && (
          <p role="status" data-testid="grant-result">
            Granted {grant.data.slug} to {grant.data.uid} ({grant.data.projection}).
          </p>
        )}
        {grant.isSuccess && grant.variables === "revoke" && <p role="status">Revoked.</p>}
        <ErrorMessage error={grant.error} />
      </form>
      <form
        className="card stack"
        aria-labelledby="upload-title"
        onSubmit={(e) => {
          e.preventDefault();
          if (archive !== undefined) upload.mutate();
        }}
      >
        <h3 id="upload-title">Upload a shared skill</h3>
        <p className="muted">
          A zip or tar.gz whose root holds SKILL.md. Uploading an existing slug updates it.
        </p>
        <Label.Root htmlFor="archive-slug">Slug</Label.Root>
        <input
          id="archive-slug"
          value={archiveSlug}
          onChange={(e) => setArchiveSlug(e.target.value)}
          required
        />
        <Label.Root htmlFor="archive-file">Archive</Label.Root>
        <input
          id="archive-file"
          type="file"
          accept=".zip,.tar.gz,.tgz"
          onChange={(e) => setArchive(e.target.files?.[0])}
          required
        />
        <button
          type="submit"
          className="primary"
          disabled={upload.isPending || archive === undefined}
        >
          {upload.isPending ? "Uploading…" : "Upload"}
        </button>
        {upload.data !== undefined && (
          <p role="status">
            {upload.data.slug}: {upload.data.status}
          </p>
        )}
        <ErrorMessage error={upload.error} />
      </form>
    </AdminPage>
  );
}
