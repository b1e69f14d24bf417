import { type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";

/** Answers a proxied request with a JSON body (a refusal's reason) and closes. */
export function answerJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "application/json", connection: "close" });
  res.end(body);
}

/**
 * The same answer written as bytes on a raw client socket (a CONNECT refused, a raw
 * forward's refusal), which then closes.
 */
export function endWithJson(client: Duplex, status: number, body: string): void {
  client.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Bad Request"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
