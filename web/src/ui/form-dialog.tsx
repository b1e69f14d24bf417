import { Dialog } from "radix-ui";
import type { FormEvent, ReactNode } from "react";
import { ErrorMessage } from "./error-message.tsx";

/** The part of a react-query mutation a form dialog drives. */
export interface FormDialogMutation {
  readonly error: unknown;
  readonly isPending: boolean;
  mutate(): void;
  reset(): void;
}

/**
 * A form in an accessible dialog (focus trapped, Esc cancels): submitting runs `mutation`,
 * its error shows above Cancel / submit, and opening or closing clears it. The caller
 * owns `open` so that the mutation's success can close the dialog.
 */
export function FormDialog(p: {
  open: boolean;
  setOpen: (open: boolean) => void;
  trigger: ReactNode;
  title: string;
  description: ReactNode;
  mutation: FormDialogMutation;
  submitLabel: ReactNode;
  children: ReactNode;
}) {
  const submit = (e: FormEvent) => {
    e.preventDefault();
    p.mutation.mutate();
  };
  return (
    <Dialog.Root
      open={p.open}
      onOpenChange={(v) => {
        p.setOpen(v);
        p.mutation.reset();
      }}
    >
      <Dialog.Trigger asChild>{p.trigger}</Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content className="dialog">
          <Dialog.Title className="dialog-title">{p.title}</Dialog.Title>
          <Dialog.Description className="dialog-description">{p.description}</Dialog.Description>
          <form onSubmit={submit} className="stack">
            {p.children}
            <ErrorMessage error={p.mutation.error} />
            <div className="dialog-actions">
              <Dialog.Close asChild>
                <button type="button">Cancel</button>
              </Dialog.Close>
              <button type="submit" className="primary" disabled={p.mutation.isPending}>
                {p.submitLabel}
              </button>
            </div>
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
