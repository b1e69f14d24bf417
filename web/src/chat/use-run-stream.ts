import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import type { RunError, RunStatus } from "../api/types.ts";
import { useConsole } from "../console-context.tsx";
import { applyRunEvent, initialRunState, type RunState } from "./run-state.ts";

/**
 * A run's view from its event stream: replayed from the start (so a reload shows the whole
 * run), then live until `run.completed`. Reconnects resume after the last seq seen.
 */
export function useRunStream(runId: string, status: RunStatus, error?: RunError) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const [state, setState] = useState<RunState>(() => initialRunState(status, error));
  const [streamError, setStreamError] = useState<unknown>(undefined);
  useEffect(() => {
    const controller = new AbortController();
    (async () => {
      try {
        for await (const event of api.runs.events(runId, 0, controller.signal)) {
          setState((s) => applyRunEvent(s, event));
          if (event.type === "run.completed") {
            void queryClient.invalidateQueries({ queryKey: ["run-changes", runId] });
            void queryClient.invalidateQueries({ queryKey: ["files"] });
            void queryClient.invalidateQueries({ queryKey: ["thread-runs"] });
          }
          // The thread list's approval badge follows the run's waits and decisions.
          if (event.type.startsWith("approval.") || event.type === "run.completed") {
            void queryClient.invalidateQueries({ queryKey: ["threads"] });
          }
        }
      } catch (err) {
        if (!controller.signal.aborted) setStreamError(err);
      }
    })();
    return () => controller.abort();
  }, [api, runId, queryClient]);
  return { state, streamError };
}
