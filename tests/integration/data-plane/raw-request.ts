import { request } from "node:http";

export interface RawResponse {
  readonly status: number;
  readonly body: string;
}

/**
 * An HTTP request whose request-target is sent byte for byte as given: no URL parser on the
 * client side normalises `..`, decodes `%2e`, or rewrites `\`. What an attacker's own
 * client would send.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  target: string,
  headers: Record<string, string>,
  body?: string,
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}
