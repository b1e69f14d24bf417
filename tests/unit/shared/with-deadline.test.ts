import { describe, expect, test } from "vitest";
import { withDeadline } from "../../../shared/async/with-deadline.ts";

const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

describe("withDeadline", () => {
  test("aborts the work's signal with a TimeoutError when it does not settle in time", async () => {
    const outcome = withDeadline(
      5,
      (signal) =>
        new Promise<never>((_resolve, reject) => {
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        }),
    );
    await expect(outcome).rejects.toMatchObject({ name: "TimeoutError" });
  });

  test("work that settles leaves no timer behind and its signal never aborts", async () => {
    const before = timers();
    let seen: AbortSignal | undefined;
    const value = await withDeadline(60_000, async (signal) => {
      seen = signal;
      return 42;
    });
    expect(value).toBe(42);
    expect(timers()).toBe(before);
    expect(seen?.aborted).toBe(false);
    await expect(
      withDeadline(60_000, async () => {
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect(timers()).toBe(before);
  });
});
