import { useMutation } from "@tanstack/react-query";
import { Label } from "radix-ui";
import { useState } from "react";
import { useConsole } from "../console-context.tsx";
import { FormDialog } from "../ui/form-dialog.tsx";
import { joinPath } from "./workdir-path.ts";

export function NewFolderDialog(p: { threadId: string; dir: string; onCreated: () => void }) {
  const { api } = useConsole();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState("");
  const create = useMutation({
    mutationFn: () => api.threads.files(p.threadId).mkdir(joinPath(p.dir, name.trim())),
    onSuccess: () => {
      setOpen(false);
      setName("");
      p.onCreated();
    },
  });
  return (
    <FormDialog
      open={open}
      setOpen={setOpen}
      trigger={<button type="button">New folder</button>}
      title="New folder"
      description={<>In {p.dir}</>}
      mutation={create}
      submitLabel="Create"
    >
      <Label.Root htmlFor="folder-name">Name</Label.Root>
      <input
        id="folder-name"
        value={name}
        onChange={(e) => setName(e.target.value)}
        required
        pattern="[^/]+"
        title="A name without slashes"
      />
    </FormDialog>
  );
}
