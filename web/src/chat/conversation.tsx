import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, type KeyboardEvent, useEffect, useRef, useState } from "react";
import { TERMINAL_STATUSES, type ThreadRun } from "../api/types.ts";
import { UndoRunButton } from "../checkpoints/undo-run-button.tsx";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { RunView } from "./run-view.tsx";

export function Conversation({ threadId }: { threadId: string }) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const runs = useQuery({
    queryKey: ["thread-runs", threadId],
    queryFn: ({ signal }) => api.threads.runs(threadId, signal),
  });
  const [input, setInput] = useState("");
  const send = useMutation({
    mutationFn: (text: string) => api.runs.create(threadId, text),
    onSuccess: async (run, text) => {
      setInput("");
      // A refetch of the list may be in flight (a replayed run's completion invalidates
      // it): if its read saw the new run, appending would show the run twice; if it did
      // not, its answer would hide the run when it lands. Cancel it, add the run once,
      // then read the list again.
      const key = ["thread-runs", threadId];
      await queryClient.cancelQueries({ queryKey: key });
      queryClient.setQueryData<ThreadRun[]>(key, (old) => [
        ...(old ?? []).filter((r) => r.run_id !== run.run_id),
        { ...run, input: text },
      ]);
      void queryClient.invalidateQueries({ queryKey: key });
    },
  });
  const bottom = useRef<HTMLDivElement>(null);
  const count = runs.data?.length ?? 0;
  useEffect(() => {
    if (count > 0) bottom.current?.scrollIntoView({ block: "end" });
  }, [count]);

  const busy = runs.data?.some((r) => !TERMINAL_STATUSES.includes(r.status)) ?? false;
  const submit = (e?: FormEvent) => {
    e?.preventDefault();
    if (input.trim() !== "" && !send.isPending) send.mutate(input);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    // Enter sends, Shift+Enter is a new line (as in every chat).
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) submit(e);
  };

  return (
    <div className="conversation">
      <div className="messages" aria-live="polite">
        {runs.isPending && <p className="muted">Loading conversation…</p>}
        <ErrorMessage error={runs.error} />
        {runs.data?.length === 0 && (
          <p className="empty">No messages yet. Ask the agent something below.</p>
        )}
        {runs.data?.map((run) => (
          <div key={run.run_id} className="turn">
            <div className="user-message" data-testid="user-message">
              {run.input}
            </div>
            <RunView
              runId={run.run_id}
              status={run.status}
              {...(run.error ? { error: run.error } : {})}
            />
            {TERMINAL_STATUSES.includes(run.status) && (
              <UndoRunButton threadId={threadId} runId={run.run_id} />
            )}
          </div>
        ))}
        <div ref={bottom} />
      </div>
      <form className="composer" onSubmit={submit}>
        <label htmlFor="composer-input" className="visually-hidden">
          Message
        </label>
        <textarea
          id="composer-input"
          rows={2}
          value={input}
          onChange={(e) => setInput(e.target.value)}
          onKeyDown={onKeyDown}
          placeholder={
            busy
              ? "A run is in progress; your message will queue after it."
              : "Message the agent (Enter to send, Shift+Enter for a new line)"
          }
        />
        <button type="submit" className="primary" disabled={send.isPending || input.trim() === ""}>
          Send
        </button>
      </form>
      <ErrorMessage error={send.error} title="Not sent" />
    </div>
  );
}
