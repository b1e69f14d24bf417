import { execFileSync } from "node:child_process";
import { existsSync, linkSync, lstatSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { namesIn, RESOLVER_KINDS, timeout } from "../workspace/harness.ts";
import { type DataPlaneEnv, errorOf, q, SECRET, setupDataPlane } from "./harness.ts";

// Special files and descriptor hygiene through HTTP, for both resolvers. A FIFO must never
// block a request (it is opened O_PATH first), a device never opened, a socket never
// connected; every refusal leaves the entry as it was.

describe.each(RESOLVER_KINDS)("special files (%s resolver)", (kind) => {
  let env: DataPlaneEnv;
  let socketServer: Server | undefined;
  beforeEach(async () => {
    env = await setupDataPlane({ kind });
    execFileSync("mkfifo", [env.at("fifo")]);
    execFileSync("mknod", [env.at("null-dev"), "c", "1", "3"]);
    socketServer = createServer();
    await new Promise<void>((resolve) => socketServer?.listen(env.at("sock"), resolve));
    writeFileSync(env.at("plain.txt"), "plain");
  });
  afterEach(async () => {
    await new Promise((resolve) => socketServer?.close(resolve));
    await env.finish();
  });

  it("listing hides the FIFO, the device and the socket", async () => {
    const body = (await (await env.request("GET", `/dp/v1/files?${q("/")}`)).json()) as {
      items: { name: string }[];
    };
    expect(body.items.map((i) => i.name)).toEqual(["plain.txt"]);
  });

  it.each(["fifo", "null-dev", "sock"])(
    "reading %s is 403 at once, never blocking",
    async (name) => {
      const outcome = await Promise.race([
        env.request("GET", `/dp/v1/files/content?${q(`/${name}`)}`),
        timeout(5_000),
      ]);
      expect(outcome).not.toBe("timeout");
      expect(await errorOf(outcome as Response)).toMatchObject({
        status: 403,
        reason: "special_file_refused",
      });
    },
  );

  it.each(["fifo", "null-dev", "sock"])(
    "writing over %s is 409 and deleting it 403",
    async (name) => {
      const put = await env.request("PUT", `/dp/v1/files/content?${q(`/${name}`)}`, { body: "x" });
      expect((await errorOf(put)).status).toBe(409);
      const del = await env.request("DELETE", `/dp/v1/files?${q(`/${name}`)}`);
      expect(await errorOf(del)).toMatchObject({ status: 403, reason: "special_file_refused" });
      expect(lstatSync(env.at(name)).isFile()).toBe(false);
      expect(namesIn(env.workdir)).toEqual(["fifo", "null-dev", "plain.txt", "sock"]);
    },
  );

  it("a recursive delete of a tree holding a FIFO is refused, the tree untouched", async () => {
    execFileSync("mkdir", ["-p", env.at("tree/sub")]);
    writeFileSync(env.at("tree/sub/f"), "x");
    execFileSync("mkfifo", [env.at("tree/sub/pipe")]);
    const response = await env.request("DELETE", `/dp/v1/files?${q("/tree")}&recursive=true`);
    expect((await errorOf(response)).status).toBe(403);
    expect(namesIn(env.at("tree/sub"))).toEqual(["f", "pipe"]);
  });

  it("a hard link to an outside file reads as a regular file (decision 0003), never writes through", async () => {
    linkSync(join(env.outside, "secret.txt"), env.at("hard"));
    const read = await env.request("GET", `/dp/v1/files/content?${q("/hard")}`);
    expect(await read.text()).toBe(SECRET);
    const put = await env.request("PUT", `/dp/v1/files/content?${q("/hard")}`, { body: "pwned" });
    expect(put.status).toBe(409);
    expect((await env.request("DELETE", `/dp/v1/files?${q("/hard")}`)).status).toBe(204);
    expect(readFileSync(join(env.outside, "secret.txt"), "utf8")).toBe(SECRET);
  });
});

describe("descriptors and aborted transfers", () => {
  let env: DataPlaneEnv;
  beforeEach(async () => {
    env = await setupDataPlane();
  });
  afterEach(() => env.finish());

  const openFds = () => readdirSync("/proc/self/fd").length;

  /** Waits until the descriptor count falls back to `baseline` (closing is asynchronous). */
  async function expectFdsBackTo(baseline: number): Promise<void> {
    for (let i = 0; i < 100 && openFds() > baseline; i++) await timeout(20);
    expect(openFds()).toBeLessThanOrEqual(baseline);
  }

  it("a download cancelled by the client, HEADs and refusals leave no descriptor open", async () => {
    writeFileSync(env.at("big.bin"), Buffer.alloc(8 * 1024 * 1024, 7));
    // Warm up keep-alive sockets and lazily opened descriptors before counting.
    await (await env.request("GET", `/dp/v1/files/content?${q("/big.bin")}`)).arrayBuffer();
    const baseline = openFds();
    for (let i = 0; i < 10; i++) {
      const controller = new AbortController();
      const response = await fetch(`${env.server.url}/dp/v1/files/content?${q("/big.bin")}`, {
        headers: { Authorization: `Bearer ${await env.token()}` },
        signal: controller.signal,
      });
      const reader = response.body?.getReader();
      await reader?.read();
      controller.abort();
      await reader?.cancel().catch(() => {});
      const head = await env.request("HEAD", `/dp/v1/files/content?${q("/big.bin")}`);
      await head.arrayBuffer();
      const range = await env.request("GET", `/dp/v1/files/content?${q("/big.bin")}`, {
        headers: { Range: `bytes=${10 ** 9}-` },
      });
      await range.arrayBuffer();
    }
    await expectFdsBackTo(baseline + 2);
  });

  it("an upload that breaks off in the middle leaves no file and no temp file", async () => {
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 4) {
          controller.error(new Error("client crashed"));
          return;
        }
        sent++;
        controller.enqueue(new Uint8Array(64 * 1024));
      },
    });
    await env.request("PUT", `/dp/v1/files/content?${q("/partial.bin")}`, { body }).then(
      (r) => r.arrayBuffer(),
      () => undefined,
    );
    // The server notices the broken body asynchronously: wait for its cleanup.
    for (let i = 0; i < 100 && readdirSync(env.workdir).length > 0; i++) await timeout(20);
    expect(namesIn(env.workdir)).toEqual([]);
    expect(existsSync(env.at("partial.bin"))).toBe(false);
  });
});
