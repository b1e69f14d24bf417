/** A head of a plain-HTTP proxy request is bounded like node:http's (16 KiB by default). */
export const MAX_HEAD_BYTES = 16 * 1024;

/** A plain-HTTP proxy request whose framing is simple enough to forward as raw bytes. */
export type ProxyRequestHead = {
  readonly method: string;
  readonly url: URL;
  /** In arrival order, names lower case, values trimmed. */
  readonly headers: readonly (readonly [string, string])[];
  /** Bytes of the body after the head (its Content-Length, else 0). */
  readonly bodyLength: number;
  /** Bytes of the head, its blank line included. */
  readonly headLength: number;
};

const REQUEST_LINE = /^([A-Z]{1,20}) (http:\/\/[\x21-\x7e]+) HTTP\/1\.[01]$/;
const HEADER_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*([\x20-\x7e\t]*?)[ \t]*$/;

/**
 * The head of a plain-HTTP proxy request (absolute-form `http://` URL), once it is all
 * there: "incomplete" until its blank line arrives, undefined for anything that is not
 * plainly framed (CONNECT, another URL form, a Transfer-Encoding, conflicting or malformed
 * Content-Length, an Upgrade, obsolete line folding, bytes outside printable ASCII, a head
 * past MAX_HEAD_BYTES). Undefined means "leave it to node:http", which parses, refuses or
 * forwards it as before: this parser never accepts what node:http would read otherwise.
 */
export function parseProxyRequestHead(bytes: Buffer): ProxyRequestHead | "incomplete" | undefined {
  const end = bytes.indexOf("\r\n\r\n");
  if (end === -1) return bytes.length >= MAX_HEAD_BYTES ? undefined : "incomplete";
  if (end + 4 > MAX_HEAD_BYTES) return undefined;
  const [requestLine = "", ...lines] = bytes.toString("latin1", 0, end).split("\r\n");
  const request = REQUEST_LINE.exec(requestLine);
  if (request === null || request[1] === "CONNECT") return undefined;
  let url: URL;
  try {
    url = new URL(request[2] ?? "");
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" || url.username !== "" || url.password !== "") return undefined;
  const headers: (readonly [string, string])[] = [];
  let length: string | undefined;
  for (const line of lines) {
    const header = HEADER_LINE.exec(line);
    if (header === null) return undefined;
    const name = (header[1] ?? "").toLowerCase();
    const value = header[2] ?? "";
    if (name === "transfer-encoding" || name === "upgrade") return undefined;
    if (name === "content-length") {
      if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== value)) return undefined;
      length = value;
    }
    headers.push([name, value]);
  }
  return {
    method: request[1] ?? "GET",
    url,
    headers,
    bodyLength: length === undefined ? 0 : Number(length),
    headLength: end + 4,
  };
}
