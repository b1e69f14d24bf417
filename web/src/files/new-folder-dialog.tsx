import { useMutation } from "@tanstack/react-query";
import { Dialog, Label } from "radix-ui";
import { type FormEvent, useState } from "react";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
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
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <Dialog.Root
      open={open}
      onOpenChange={(v) => {
        setOpen(v);
        create.reset();
      }}
    >
      <Dialog.Trigger asChild>
        <button type="button">New folder</button>
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content className="dialog">
          <Dialog.Title className="dialog-title">New folder</Dialog.Title>
          <Dialog.Description className="dialog-description">In {p.dir}</Dialog.Description>
          <form onSubmit={submit} className="stack">
            <Label.Root htmlFor="folder-name">Name</Label.Root>
            <input
              id="folder-name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              required
              pattern="[^/]+"
              title="A name without slashes"
            />
            <ErrorMessage error={create.error} />
            <div className="dialog-actions">
              <Dialog.Close asChild>
                <button type="button">Cancel</button>
              </Dialog.Close>
              <button type="submit" className="primary" disabled={create.isPending}>
                Create
              </button>
            </div>
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
