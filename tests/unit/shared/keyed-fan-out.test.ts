import { describe, expect, test } from "vitest";
import { KeyedFanOut } from "../../../shared/listen/keyed-fan-out.ts";

// The fan-out behind every LISTEN: run ids for cancels and event streams, uids for lease
// wakeups. A wait ends at its key's notify, its timeout or its abort, and never rejects.

/** Lets every queued promise callback run (a setImmediate comes after all microtasks). */
const drain = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("KeyedFanOut", () => {
  test("add calls back on its key's notifies until removed; a callback may remove itself", () => {
    const fanOut = new KeyedFanOut();
    const calls: string[] = [];
    const removeA = fanOut.add("a", () => calls.push("a1"));
    const removeSelf: () => void = fanOut.add("a", () => {
      calls.push("a2");
      removeSelf();
    });
    fanOut.add("b", () => calls.push("b"));
    fanOut.notify("a");
    fanOut.notify("a");
    removeA();
    fanOut.notify("a");
    expect(calls).toEqual(["a1", "a2", "a1"]);
  });

  test("next ends at a notify of its key, not of another", async () => {
    const fanOut = new KeyedFanOut();
    let waiting = false;
    let ended = false;
    const wait = fanOut
      .next("uid-1", 600_000, new AbortController().signal, () => {
        waiting = true;
      })
      .then(() => {
        ended = true;
      });
    expect(waiting).toBe(true);
    fanOut.notify("uid-2");
    await drain();
    expect(ended).toBe(false);
    fanOut.notify("uid-1");
    await wait;
    expect(ended).toBe(true);
  });

  test("next ends at an abort or a timeout, and a finished wait is called no more", async () => {
    const fanOut = new KeyedFanOut();
    const controller = new AbortController();
    const aborted = fanOut.next("k", 600_000, controller.signal);
    controller.abort(new Error("stop"));
    await expect(aborted).resolves.toBeUndefined();
    await expect(fanOut.next("k", 1, new AbortController().signal)).resolves.toBeUndefined();
    // Both waits removed themselves: only a new callback hears the next notify.
    const calls: string[] = [];
    fanOut.add("k", () => calls.push("new"));
    fanOut.notify("k");
    expect(calls).toEqual(["new"]);
  });

  test("next with a signal already aborted ends at once without registering", async () => {
    const fanOut = new KeyedFanOut();
    let waiting = false;
    await fanOut.next("k", 600_000, AbortSignal.abort(), () => {
      waiting = true;
    });
    expect(waiting).toBe(false);
  });
});
