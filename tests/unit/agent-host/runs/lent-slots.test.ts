import { describe, expect, it } from "vitest";
import { LentSlots } from "../../../../agent-host/runs/fair-share/lent-slots.ts";

// The bookkeeping of decision 0141 alone (the whole path is in
// tests/integration/runs/lease-waiter-slots.test.ts): which slots are lent, who gets one
// back first, and that a tree never holds two.

function ledger(slots: number) {
  let inflight = 0;
  let freed = 0;
  // As FairRunSlots does: a lend or a return wakes a fill, which serves returns first.
  const lent: LentSlots = new LentSlots(() => {
    freed++;
    queueMicrotask(() => lent.serve(() => busy() < slots));
  });
  const busy = () => inflight - lent.out;
  return {
    lent,
    start(id: string) {
      inflight++;
      lent.track(id);
    },
    end(id: string) {
      inflight--;
      lent.untrack(id);
    },
    busy,
    serve: () => lent.serve(() => busy() < slots),
    freed: () => freed,
  };
}

describe("LentSlots", () => {
  it("a waiting tree frees its slot; its grant waits for a free one, first come first served", async () => {
    const l = ledger(2);
    l.start("a");
    l.start("b");
    const aWait = l.lent.lend("a");
    expect(l.busy()).toBe(1);
    expect(l.freed()).toBe(1);
    l.start("c"); // the freed slot is claimed by another run
    const bWait = l.lent.lend("b");
    l.start("d");
    expect(l.busy()).toBe(2);

    const order: string[] = [];
    const aBack = aWait?.takeBack(new AbortController().signal).then(() => order.push("a"));
    const bBack = bWait?.takeBack(new AbortController().signal).then(() => order.push("b"));
    expect(l.lent.returning).toBe(true);
    l.serve(); // no room: nobody returns
    await Promise.resolve();
    expect(order).toEqual([]);
    l.end("c");
    l.serve();
    await aBack;
    expect(order).toEqual(["a"]);
    expect(l.busy()).toBe(2);
    l.end("d");
    l.serve();
    await bBack;
    expect(order).toEqual(["a", "b"]);
    expect(l.lent.returning).toBe(false);
  });

  it("two waiting commands of one tree lend one slot and take one back", async () => {
    const l = ledger(1);
    l.start("a");
    const first = l.lent.lend("a");
    const second = l.lent.lend("a");
    expect(l.lent.out).toBe(1);
    expect(l.freed()).toBe(1);
    await first?.takeBack(new AbortController().signal);
    expect(l.lent.out).toBe(0);
    // The tree holds its slot again: the sibling's grant needs no second one.
    await second?.takeBack(new AbortController().signal);
    expect(l.busy()).toBe(1);
  });

  it("an aborted return leaves the queue; a forgone one keeps the tree off the count until it ends", async () => {
    const l = ledger(1);
    l.start("a");
    l.start("b");
    const aWait = l.lent.lend("a");
    l.lent.lend("b")?.forgo();
    expect(l.lent.out).toBe(2);
    l.start("c");
    const abort = new AbortController();
    const back = aWait?.takeBack(abort.signal);
    abort.abort();
    await back;
    expect(l.lent.returning).toBe(false);
    expect(l.lent.out).toBe(2);
    l.end("b");
    expect(l.lent.out).toBe(1);
    expect(l.busy()).toBe(1);
  });

  it("a run not in a slot lends nothing", () => {
    expect(ledger(1).lent.lend("unknown")).toBeUndefined();
  });
});
