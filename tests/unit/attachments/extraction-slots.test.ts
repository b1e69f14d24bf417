import { describe, expect, test } from "vitest";
import { createExtractionSlots } from "../../../agent-host/attachments/extraction/extraction-slots.ts";

describe("extraction slots (the per-node concurrency cap)", () => {
  test("a third extraction waits until one of two frees its slot", async () => {
    const slots = createExtractionSlots(2);
    const signal = new AbortController().signal;
    const first = await slots.acquire(signal);
    await slots.acquire(signal);
    let third = false;
    const waiting = slots.acquire(signal).then((release) => {
      third = true;
      return release;
    });
    await Promise.resolve();
    expect(third).toBe(false);
    first();
    first(); // a second release of the same slot frees nothing more
    await waiting;
    expect(third).toBe(true);
    let fourth = false;
    void slots.acquire(signal).then(() => {
      fourth = true;
    });
    await Promise.resolve();
    expect(fourth).toBe(false);
  });

  test("an aborted wait leaves the queue and takes no slot", async () => {
    const slots = createExtractionSlots(1);
    const release = await slots.acquire(new AbortController().signal);
    const controller = new AbortController();
    const aborted = slots.acquire(controller.signal);
    controller.abort(new Error("client went away"));
    await expect(aborted).rejects.toThrow("client went away");
    release();
    // The slot went to no one: the next caller gets it at once.
    const next = await slots.acquire(new AbortController().signal);
    expect(typeof next).toBe("function");
  });
});
