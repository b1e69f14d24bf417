/**
 * On a terminal, the shell model's reply (its command's result) would print the lines the
 * command's live output just printed a second time. This holds back reply text while it
 * only repeats the result of the tool call right before it (whose output was shown live),
 * drops it when the message ends as exactly that result, and lets it through as soon as it
 * says anything else (a model's own words).
 */
export function replyEchoFilter(emit: (text: string) => void) {
  let result: string | undefined;
  let held = "";
  const flush = () => {
    if (held === "") return;
    const text = held;
    held = "";
    emit(text);
  };
  return {
    /** A tool call ended; `shownLive`: its output was printed as it ran. */
    toolCompleted(resultText: string, shownLive: boolean) {
      flush();
      result = shownLive ? resultText.trimEnd() : undefined;
    },
    toolStarted() {
      flush();
      result = undefined;
    },
    delta(text: string) {
      if (result === undefined) {
        emit(text);
        return;
      }
      held += text;
      if (!result.startsWith(held.trimEnd())) {
        result = undefined;
        flush();
      }
    },
    /** The message (or the run) ended: a reply that was the result is dropped. */
    end() {
      if (result !== undefined && held.trimEnd() === result) held = "";
      result = undefined;
      flush();
    },
  };
}
