import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Label } from "radix-ui";
import { useState } from "react";
import { useNavigate } from "react-router";
import { useConsole } from "../console-context.tsx";
import { FormDialog } from "../ui/form-dialog.tsx";

const NEW_PROJECT = "__new__";
const LINKED_PROJECT = "__linked__";

/** New thread: in a new project (default), an existing one, or one linked to a directory. */
export function NewThreadDialog() {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const [title, setTitle] = useState("");
  const [project, setProject] = useState(NEW_PROJECT);
  const [linkedPath, setLinkedPath] = useState("");
  const projects = useQuery({
    queryKey: ["projects"],
    queryFn: ({ signal }) => api.projects.list(signal),
    enabled: open,
  });
  const create = useMutation({
    mutationFn: async () => {
      let projectId: string | undefined = project === NEW_PROJECT ? undefined : project;
      if (project === LINKED_PROJECT) {
        projectId = (await api.projects.create({ workdir_path: linkedPath.trim() })).id;
      }
      return api.threads.create({
        ...(title.trim() === "" ? {} : { title: title.trim() }),
        ...(projectId === undefined ? {} : { project_id: projectId }),
      });
    },
    onSuccess: (thread) => {
      void queryClient.invalidateQueries({ queryKey: ["threads"] });
      void queryClient.invalidateQueries({ queryKey: ["projects"] });
      setOpen(false);
      setTitle("");
      navigate(`/threads/${thread.thread_id}`);
    },
  });
  return (
    <FormDialog
      open={open}
      setOpen={setOpen}
      trigger={
        <button type="button" className="primary wide">
          New thread
        </button>
      }
      title="New thread"
      description="A thread is a conversation; its files live in its project's directory."
      mutation={create}
      submitLabel={create.isPending ? "Creating…" : "Create"}
    >
      <Label.Root htmlFor="thread-title">Title (optional)</Label.Root>
      <input id="thread-title" value={title} onChange={(e) => setTitle(e.target.value)} />
      <Label.Root htmlFor="thread-project">Project</Label.Root>
      <select id="thread-project" value={project} onChange={(e) => setProject(e.target.value)}>
        <option value={NEW_PROJECT}>A new project</option>
        <option value={LINKED_PROJECT}>Link an existing directory…</option>
        {projects.data
          ?.filter((p) => !p.implicit || p.directory_mode === "linked")
          .map((p) => (
            <option key={p.id} value={p.id}>
              {p.name ?? p.workdir_path}
            </option>
          ))}
        {projects.data
          ?.filter((p) => p.implicit && p.directory_mode === "managed")
          .map((p) => (
            <option key={p.id} value={p.id}>
              {p.workdir_path}
            </option>
          ))}
      </select>
      {project === LINKED_PROJECT && (
        <>
          <Label.Root htmlFor="linked-path">Directory in your workspace</Label.Root>
          <input
            id="linked-path"
            placeholder="code/my-repo"
            value={linkedPath}
            onChange={(e) => setLinkedPath(e.target.value)}
            required
          />
        </>
      )}
    </FormDialog>
  );
}
