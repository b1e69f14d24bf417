import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  ConflictError,
  NotFoundError,
  type RunEvent,
  UnauthenticatedError,
  Workcell,
  WorkcellError,
} from "../../../sdk/src/index.ts";
import { type LocalWorkcell, startLocalWorkcell } from "../../support/local-workcell-process.ts";
import { type DroppingProxy, startDroppingProxy } from "./dropping-proxy.ts";

// The SDK against the local Workcell (`npm start` in its own process, Docker sandboxes),
// used the way its README says.

let local: LocalWorkcell;
let alice: Workcell;

beforeAll(async () => {
  local = await startLocalWorkcell();
  alice = new Workcell({ baseUrl: local.url, token: await local.token("alice") });
}, 320_000);
afterAll(async () => {
  await local?.stop();
});

describe("the SDK against the local Workcell", () => {
  test("the README quick start: run, stream events, read the file it wrote", async () => {
    const run = await alice.runs.create("echo hi > outputs/a.txt && echo done");
    const types: string[] = [];
    for await (const event of run.events()) types.push(event.type);
    expect(types[0]).toBe("run.status");
    expect(types.at(-1)).toBe("run.completed");
    const finished = await run.refresh();
    expect(finished.status).toBe("succeeded");

    const thread = await alice.threads.get(run.threadId);
    expect(await thread.files.read("outputs/a.txt")).toBe("hi\n");
    expect((await thread.files.list("outputs")).map((e) => e.name)).toEqual(["a.txt"]);
    expect(await run.changes()).toMatchObject({
      items: expect.arrayContaining([expect.objectContaining({ path: "outputs/a.txt" })]),
    });

    // Files: write, refuse to overwrite, upload a batch, delete.
    await thread.files.write("notes.txt", "first");
    await expect(thread.files.write("notes.txt", "second")).rejects.toBeInstanceOf(ConflictError);
    expect(await thread.files.read("/notes.txt")).toBe("first");
    await thread.files.upload("outputs", [
      { name: "b.txt", data: "bee" },
      { name: "c.bin", data: new Uint8Array([1, 2, 3]) },
    ]);
    expect(Array.from(await thread.files.readBytes("outputs/c.bin"))).toEqual([1, 2, 3]);
    await thread.files.delete("notes.txt");
    await expect(thread.files.read("notes.txt")).rejects.toBeInstanceOf(NotFoundError);

    // A second run in the same thread, waited for.
    const second = await thread.run("cat outputs/b.txt");
    expect((await second.wait()).status).toBe("succeeded");
  });

  test("a stream dropped mid-run resumes with Last-Event-ID: no event lost or repeated", async () => {
    let proxy: DroppingProxy | undefined;
    try {
      proxy = await startDroppingProxy(local.url, 2);
      const viaProxy = new Workcell({ baseUrl: proxy.url, token: await local.token("alice") });
      const run = await viaProxy.runs.create("echo one; sleep 1; echo two; sleep 1; echo three");
      const seen: RunEvent[] = [];
      for await (const event of run.events()) seen.push(event);

      // Two cuts, so three stream requests: the later ones resumed after the last event.
      expect(proxy.streamRequests.length).toBeGreaterThanOrEqual(3);
      expect(proxy.streamRequests[0]).toBe("");
      expect(proxy.streamRequests[1]).toBe(String(seen[0]?.seq));
      expect(proxy.streamRequests[2]).toBe(String(seen[1]?.seq));

      // The same events as one uninterrupted read of the finished run, in order.
      const direct: RunEvent[] = [];
      for await (const event of (await alice.runs.get(run.id)).events()) direct.push(event);
      expect(seen.map((e) => [e.seq, e.type])).toEqual(direct.map((e) => [e.seq, e.type]));
      expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
      expect(seen.at(-1)?.type).toBe("run.completed");
    } finally {
      await proxy?.close();
    }
  });

  test("attachments.upload: presigned PUT and confirm into the Workdir", async () => {
    const thread = await alice.threads.create({ title: "with attachments" });
    const [attachment] = await thread.attach([
      { name: "report.txt", data: "quarterly numbers\n", contentType: "text/plain" },
    ]);
    expect(attachment).toMatchObject({ file_name: "report.txt", path: "uploads/report.txt" });
    expect(await thread.files.read("uploads/report.txt")).toBe("quarterly numbers\n");
    expect((await alice.attachments.list(thread.id)).map((a) => a.file_name)).toEqual([
      "report.txt",
    ]);
  });

  test("another user's thread is a typed NotFoundError, with the server's message", async () => {
    const thread = await alice.threads.create();
    const bob = new Workcell({ baseUrl: local.url, token: await local.token("bob") });
    const error = await bob.threads.get(thread.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toBeInstanceOf(WorkcellError);
    expect(error).toMatchObject({ code: "not_found", status: 404, name: "NotFoundError" });
    expect((error as Error).message).toMatch(/thread/i);
    // Nor can bob reach its files or start a run in it.
    await expect(bob.threads.get(thread.id).then((t) => t.files.list())).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(bob.runs.create("echo x", { threadId: thread.id })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    const anonymous = new Workcell({ baseUrl: local.url, token: "not-a-token" });
    await expect(anonymous.threads.list()).rejects.toBeInstanceOf(UnauthenticatedError);
  });

  test("every call takes an AbortSignal", async () => {
    const aborted = AbortSignal.abort(new Error("stop"));
    await expect(alice.threads.list({ signal: aborted })).rejects.toThrow("stop");
    const run = await alice.runs.create("sleep 2; echo late");
    const controller = new AbortController();
    const events = run.events({ signal: controller.signal });
    const first = await events.next();
    expect(first.done).toBe(false);
    controller.abort(new Error("enough"));
    await expect(events.next()).rejects.toThrow("enough");
    await run.cancel().catch((e: unknown) => {
      if (!(e instanceof ConflictError)) throw e;
    });
  });
});
