import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: Record<string, unknown>;
}

export type ChatHandler = (
  request: RecordedRequest,
  res: ServerResponse,
  attempt: number,
) => void | Promise<void>;

export interface ChatServer {
  /** Base URL as a client is configured with it, e.g. http://127.0.0.1:1234/v1. */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  /** Resolves when a client connection closes (abort, timeout). */
  closedConnections: number;
  close(): Promise<void>;
}

/**
 * A real HTTP server on 127.0.0.1 that speaks the Chat Completions protocol the way the
 * test tells it to: the stand-in for a hosted LLM (docs/testing.md: doubles speak the real
 * wire protocol). Only POST /v1/chat/completions is served; anything else fails the test.
 */
export async function startChatServer(handler: ChatHandler): Promise<ChatServer> {
  const requests: RecordedRequest[] = [];
  const state = { closedConnections: 0 };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(599).end(`unexpected request ${req.method} ${req.url}`);
      throw new Error(`unexpected request ${req.method} ${req.url}`);
    }
    const recorded: RecordedRequest = {
      method: req.method,
      url: req.url,
      headers: req.headers,
      body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
    };
    requests.push(recorded);
    res.on("close", () => {
      if (!res.writableFinished) state.closedConnections++;
    });
    await handler(recorded, res, requests.length);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get closedConnections() {
      return state.closedConnections;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Starts an SSE response. */
export function openStream(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
}

/** Writes one `data:` event. */
export function send(res: ServerResponse, payload: unknown): void {
  res.write(`data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`);
}

/** A chunk with a content delta. */
export function textChunk(content: string, finish: string | null = null) {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    model: "test-model",
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  };
}

export function toolChunk(
  calls: { index: number; id?: string; name?: string; arguments?: string }[],
  finish: string | null = null,
) {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: calls.map((c) => ({
            index: c.index,
            ...(c.id === undefined ? {} : { id: c.id, type: "function" }),
            function: {
              ...(c.name === undefined ? {} : { name: c.name }),
              arguments: c.arguments ?? "",
            },
          })),
        },
        finish_reason: finish,
      },
    ],
  };
}
