// Entry of the extraction child process (started by run-extraction-process.ts under
// prlimit): one document per process. The job is argv[2] (JSON), the document is stdin,
// the answer is stdout (extraction-reply.ts). The parent set RLIMIT_AS, RLIMIT_CPU and
// V8's heap size before this ran, so a document that needs more memory or CPU than
// allowed ends this process (an allocation refused, SIGXCPU, a V8 out-of-memory abort),
// never the agent-host. Nothing of the agent-host's environment is inherited.
import { extractDocument } from "./extract-document.ts";
import { isResourceLimit } from "./extraction-limit-error.ts";
import {
  type ExtractionJob,
  type ExtractionReplyHeader,
  MAX_REPLY_HEADER_BYTES,
} from "./extraction-reply.ts";

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const joined = Buffer.concat(chunks);
  // A fresh, exactly sized copy: PDF.js refuses a Buffer, and a view of a pooled slab
  // would carry the whole slab along.
  return new Uint8Array(joined);
}

function writeAll(data: string | Uint8Array): Promise<void> {
  return new Promise((resolve, reject) =>
    process.stdout.write(data, (error) => (error ? reject(error) : resolve())),
  );
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? "") as ExtractionJob;
  const bytes = await readStdin();
  let header: ExtractionReplyHeader;
  let text: Uint8Array | undefined;
  try {
    const result = await extractDocument(job, bytes);
    text = new TextEncoder().encode(result.text);
    header = { ok: true, truncated: result.truncated, textBytes: text.byteLength };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    header = {
      ok: false,
      limit: isResourceLimit(error),
      message: message.slice(0, MAX_REPLY_HEADER_BYTES / 4),
    };
  }
  await writeAll(`${JSON.stringify(header)}\n`);
  if (text !== undefined) await writeAll(text);
}

await main();
// PDF.js may leave timers behind; the answer is out, the process has nothing else to do.
process.exit(0);
