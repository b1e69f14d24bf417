import { PassThrough } from "node:stream";

// A stand-in for the `awslambda` global of Lambda's Node.js runtime (AWS cannot be reached
// from a test machine), speaking the runtime's response-streaming wire format:
// `streamifyResponse` marks the handler as streaming and the runtime then calls it with
// (event, responseStream, context); `HttpResponseStream.from` writes the HTTP metadata as
// JSON followed by 8 NUL bytes, after which every write is body, delivered to the Function
// URL's client as it is written.

const STREAMING = Symbol.for("aws.lambda.runtime.handler.streaming");
const DELIMITER = Buffer.alloc(8);

type StreamingHandler = (event: unknown, stream: PassThrough, context: unknown) => Promise<void>;

export function installLambdaStreamingRuntime(): void {
  (globalThis as Record<string, unknown>).awslambda = {
    streamifyResponse(handler: StreamingHandler) {
      Object.defineProperty(handler, STREAMING, { value: "response" });
      return handler;
    },
    HttpResponseStream: {
      from(stream: PassThrough, metadata: unknown) {
        stream.write(Buffer.concat([Buffer.from(JSON.stringify(metadata)), DELIMITER]));
        return stream;
      },
    },
  };
}

export type StreamedResponse = {
  metadata: { statusCode: number; headers: Record<string, string>; cookies: string[] };
  /** Body chunks as the handler writes them. */
  body: AsyncIterator<Buffer>;
  /** Resolves when the handler returned. */
  done: Promise<void>;
};

/** Invokes a streaming handler as the runtime does and splits off the metadata prelude. */
export async function invokeStreaming(handler: unknown, event: unknown): Promise<StreamedResponse> {
  if ((handler as Record<symbol, unknown>)[STREAMING] !== "response") {
    throw new Error("the handler is not marked as a streaming handler (streamifyResponse)");
  }
  const stream = new PassThrough();
  const done = (handler as StreamingHandler)(event, stream, { awsRequestId: crypto.randomUUID() });
  const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let prelude = Buffer.alloc(0);
  for (;;) {
    const next = await chunks.next();
    if (next.done) throw new Error("the stream ended before the metadata prelude");
    prelude = Buffer.concat([prelude, next.value]);
    const at = prelude.indexOf(DELIMITER);
    if (at < 0) continue;
    const metadata = JSON.parse(prelude.subarray(0, at).toString()) as StreamedResponse["metadata"];
    let pending: Buffer | undefined = prelude.subarray(at + DELIMITER.length);
    const body: AsyncIterator<Buffer> = {
      next: async () => {
        const first = pending;
        pending = undefined;
        if (first !== undefined && first.length > 0) return { done: false, value: first };
        return chunks.next();
      },
    };
    return { metadata, body, done };
  }
}
