import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { mintCapability } from "../../../shared/capability/index.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { newKeyPair, type TestKeyPair } from "../../unit/capability/capability-keys.ts";
import { ALICE, ALICE_WORKDIR, q } from "./harness.ts";

// Content GET and PUT stream: a 256 MiB file goes through the server without the server
// ever holding it. The server runs in its own process (server-child.ts) so its peak
// resident memory (VmHWM, reset between phases) can be read; a buffering server would grow
// by at least the file size. Tests never assert on time, only on bytes and memory.
//
// Why 256 MiB and not less: V8 frees the Buffers of a streamed body only when a GC runs,
// and it schedules one for external memory after roughly 64 MiB of it has accumulated.
// Measured here: an upload grows the server's peak by ~55 MiB whether the file has 64, 128
// or 256 MiB (a download by ~0), so only a file well above that slack tells streaming from
// buffering.

const FILE_BYTES = 256 * 1024 * 1024;
const CHUNK_BYTES = 256 * 1024;
/** Peak growth allowed: half the file, i.e. far below what holding it would take. */
const MAX_PEAK_GROWTH_BYTES = FILE_BYTES / 2;

let root: DataRoot;
let keys: TestKeyPair;
let child: ChildProcessWithoutNullStreams;
let url: string;

/** Resets the process's peak RSS to its current RSS (Linux clear_refs "5"). */
function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

function peakRssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined) throw new Error("VmHWM missing from /proc/<pid>/status");
  return Number(kb) * 1024;
}

/** Deterministic bytes, produced on demand: the client never holds the whole file either. */
function patternedBody(total: number): { stream: ReadableStream<Uint8Array>; sha256: string } {
  const hash = createHash("sha256");
  let sent = 0;
  const chunkFor = (offset: number, length: number) => {
    const chunk = new Uint8Array(length);
    for (let i = 0; i < length; i += 4096) chunk[i] = ((offset + i) / 4096) & 0xff;
    return chunk;
  };
  // Hash precomputed in the same chunking so the test can compare without storing.
  for (let offset = 0; offset < total; offset += CHUNK_BYTES) {
    hash.update(chunkFor(offset, Math.min(CHUNK_BYTES, total - offset)));
  }
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) {
        controller.close();
        return;
      }
      const length = Math.min(CHUNK_BYTES, total - sent);
      controller.enqueue(chunkFor(sent, length));
      sent += length;
    },
  });
  return { stream, sha256: hash.digest("hex") };
}

async function token(): Promise<string> {
  const minted = await mintCapability({
    privateKey: keys.privateJwk,
    uid: ALICE,
    workdirPath: ALICE_WORKDIR,
    ops: ["read", "write"],
  });
  return minted.token;
}

beforeAll(async () => {
  root = await freshDataRoot();
  keys = await newKeyPair();
  const sys = createLibcSyscalls();
  const users = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
  });
  (await users.ensureManagedWorkdir(ALICE, ALICE_WORKDIR)).close();
  child = spawn(process.execPath, [join(import.meta.dirname, "server-child.ts")], {
    env: {
      ...process.env,
      DATA_ROOT: root.path,
      CAPABILITY_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
    },
  });
  const lines = createInterface({ input: child.stdout });
  const stderr: string[] = [];
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  url = await new Promise<string>((resolve, reject) => {
    lines.once("line", (line) => resolve((JSON.parse(line) as { url: string }).url));
    child.once("exit", (code) => reject(new Error(`server exited (${code}): ${stderr.join("")}`)));
  });
});

afterAll(async () => {
  child?.stdin.end();
  await new Promise((resolve) => {
    if (child === undefined || child.exitCode !== null) resolve(undefined);
    else child.once("exit", resolve);
  });
  await root?.remove();
});

describe("large files stream through the server", () => {
  it(`PUT then GET of ${FILE_BYTES / 1024 / 1024} MiB: bytes intact, server peak memory far below the size`, async () => {
    const bearer = { Authorization: `Bearer ${await token()}` };
    // Warm-up: let the server reach its steady state (JIT, buffers, keep-alive) first.
    const warm = patternedBody(4 * 1024 * 1024);
    const warmPut = await fetch(`${url}/dp/v1/files/content?${q("/warm.bin")}`, {
      method: "PUT",
      headers: bearer,
      body: warm.stream,
      duplex: "half",
    } as RequestInit);
    expect(warmPut.status).toBe(201);
    await (
      await fetch(`${url}/dp/v1/files/content?${q("/warm.bin")}`, { headers: bearer })
    ).arrayBuffer();
    const pid = child.pid as number;
    resetPeakRss(pid);
    const baseline = peakRssBytes(pid);

    const upload = patternedBody(FILE_BYTES);
    const put = await fetch(`${url}/dp/v1/files/content?${q("/big.bin")}`, {
      method: "PUT",
      headers: bearer,
      body: upload.stream,
      duplex: "half",
    } as RequestInit);
    expect(put.status).toBe(201);
    expect(((await put.json()) as { size: number }).size).toBe(FILE_BYTES);
    const onDisk = join(root.path, "users", ALICE, "workspace", ALICE_WORKDIR, "big.bin");
    expect(statSync(onDisk).size).toBe(FILE_BYTES);
    const afterPut = peakRssBytes(pid);
    resetPeakRss(pid);
    const beforeGet = peakRssBytes(pid);

    const get = await fetch(`${url}/dp/v1/files/content?${q("/big.bin")}`, { headers: bearer });
    expect(get.status).toBe(200);
    expect(get.headers.get("content-length")).toBe(String(FILE_BYTES));
    const hash = createHash("sha256");
    let received = 0;
    for await (const chunk of get.body as ReadableStream<Uint8Array>) {
      hash.update(chunk);
      received += chunk.byteLength;
    }
    expect(received).toBe(FILE_BYTES);
    expect(hash.digest("hex")).toBe(upload.sha256);
    const afterGet = peakRssBytes(pid);

    const growth = { put: afterPut - baseline, get: afterGet - beforeGet };
    console.info(
      `server peak RSS growth: PUT ${growth.put >> 20} MiB, GET ${growth.get >> 20} MiB`,
    );
    expect(growth.put).toBeLessThan(MAX_PEAK_GROWTH_BYTES);
    expect(growth.get).toBeLessThan(MAX_PEAK_GROWTH_BYTES);
  });

  it("a Range in the middle of the large file returns exactly those bytes", async () => {
    const bearer = { Authorization: `Bearer ${await token()}` };
    const start = 33 * 1024 * 1024 + 17;
    const end = start + 3 * 4096;
    const response = await fetch(`${url}/dp/v1/files/content?${q("/big.bin")}`, {
      headers: { ...bearer, Range: `bytes=${start}-${end}` },
    });
    expect(response.status).toBe(206);
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(bytes.byteLength).toBe(end - start + 1);
    const onDisk = readFileSync(
      join(root.path, "users", ALICE, "workspace", ALICE_WORKDIR, "big.bin"),
    );
    expect(Buffer.from(bytes).equals(onDisk.subarray(start, end + 1))).toBe(true);
  });
});
