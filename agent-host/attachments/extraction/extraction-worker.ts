// Entry of the extraction worker thread (started by worker-document-extractor.ts): one
// document per worker, result posted back once, then the thread ends. A parser that loops,
// or a document that needs more heap than the worker's resourceLimits, kills this thread,
// never the data plane.
import { parentPort, workerData } from "node:worker_threads";
import { type DocumentExtractionRequest, extractDocument } from "./extract-document.ts";
import type { WorkerReply } from "./worker-reply.ts";

async function main(port: NonNullable<typeof parentPort>): Promise<void> {
  let reply: WorkerReply;
  try {
    const result = await extractDocument(workerData as DocumentExtractionRequest);
    reply = { ok: true, text: result.text, truncated: result.truncated };
  } catch (error) {
    reply = { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
}

if (parentPort !== null) await main(parentPort);
