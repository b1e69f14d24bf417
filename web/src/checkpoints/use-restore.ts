import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useConsole } from "../console-context.tsx";

/** Restores a checkpoint of the thread and refreshes what shows the Workdir. */
export function useRestore(threadId: string) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (checkpointId: string) => api.checkpoints.restore(threadId, checkpointId),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["checkpoints", threadId] });
      void queryClient.invalidateQueries({ queryKey: ["files", threadId] });
    },
  });
}
