import { describe, expect, test } from "vitest";
import type { ExtractionJob } from "../../../agent-host/attachments/extraction/extraction-reply.ts";
import {
  type ExtractionProcessLimits,
  runExtractionProcess,
} from "../../../agent-host/attachments/extraction/run-extraction-process.ts";
import { deflatedZerosFast, pdfWithFlateContent, pdfWithLines } from "./support/documents.ts";

// Each cap of the extraction child process, reached on its own (the other caps generous),
// through the real child under prlimit.

const JOB: ExtractionJob = {
  kind: "html",
  inputTruncated: false,
  maxTextBytes: 1024 * 1024,
  maxDocxInflatedBytes: 256 * 1024 * 1024,
  maxDocxEntries: 10_000,
  maxHtmlDepth: 512,
};
const LIMITS: ExtractionProcessLimits = {
  timeoutMs: 120_000,
  cpuSeconds: 60,
  addressSpaceMb: 2048,
  heapMb: 512,
  maxOutputBytes: 2 * 1024 * 1024,
};

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

function run(
  job: Partial<ExtractionJob>,
  bytes: Uint8Array,
  limits: Partial<ExtractionProcessLimits> = {},
  signal = new AbortController().signal,
) {
  return runExtractionProcess({ ...JOB, ...job }, once(bytes), { ...LIMITS, ...limits }, signal);
}

/** domino parses nested tags in time quadratic in the depth: a CPU bomb without the depth bound. */
const nested = (depth: number) => Buffer.from(`${"<div>".repeat(depth)}x${"</div>".repeat(depth)}`);

describe("the extraction child process", () => {
  test("an ordinary document comes back as text", async () => {
    const outcome = await run({ kind: "pdf" }, pdfWithLines(["Hello from the child"]));
    expect(outcome).toMatchObject({ ok: true, truncated: false });
    expect(outcome.ok && outcome.text).toContain("Hello from the child");
  });

  test("the address-space cap stops a stream that inflates past it", async () => {
    const bomb = pdfWithFlateContent(deflatedZerosFast(1100 * 1024 * 1024, "zlib"));
    const outcome = await run({ kind: "pdf" }, bomb);
    expect(outcome).toEqual({
      ok: false,
      limit: true,
      message: "the document needs more than 2048 MiB of memory to extract",
    });
  }, 120_000);

  test("the CPU-time cap stops a parse that only burns CPU", async () => {
    const outcome = await run({ maxHtmlDepth: 10_000_000 }, nested(100_000), { cpuSeconds: 1 });
    expect(outcome).toEqual({
      ok: false,
      limit: true,
      message: "the document needs more than 1 s of CPU time to extract",
    });
  }, 120_000);

  test("the wall-clock cap kills a child that takes too long", async () => {
    const outcome = await run({ maxHtmlDepth: 10_000_000 }, nested(100_000), { timeoutMs: 500 });
    expect(outcome).toEqual({
      ok: false,
      limit: true,
      message: "the extraction took longer than 500 ms",
    });
  }, 120_000);

  test("the output cap kills a child that writes more than it may", async () => {
    const page = Buffer.from(`<p>${"word ".repeat(50_000)}</p>`);
    const outcome = await run({}, page, { maxOutputBytes: 4096 + 1000 });
    expect(outcome).toEqual({
      ok: false,
      limit: true,
      message: "the extraction wrote more than 5096 bytes",
    });
  }, 120_000);

  test("the depth bound refuses deep HTML before it is parsed", async () => {
    expect(await run({}, nested(513))).toEqual({
      ok: false,
      limit: true,
      message: "the HTML is nested deeper than 512 elements",
    });
    const flat = await run({}, nested(512));
    expect(flat.ok).toBe(true);
  }, 120_000);

  test("a document that is just broken is not a limit", async () => {
    const outcome = await run({ kind: "docx" }, Buffer.from("not a zip"));
    expect(outcome).toMatchObject({ ok: false, limit: false });
  });

  test("an abort kills the child and rejects with the reason", async () => {
    const controller = new AbortController();
    const running = run({ maxHtmlDepth: 10_000_000 }, nested(100_000), {}, controller.signal);
    controller.abort(new Error("the client went away"));
    await expect(running).rejects.toThrow("the client went away");
  });
});
