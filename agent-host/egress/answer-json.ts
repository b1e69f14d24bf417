import type { ServerResponse } from "node:http";

/** Answers a proxied request with a JSON body (a refusal's reason) and closes. */
export function answerJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "application/json", connection: "close" });
  res.end(body);
}
