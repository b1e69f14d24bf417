import { describe, expect, it } from "vitest";
import { parseProxyRequestHead } from "../../../../agent-host/egress/proxy-request-head.ts";

// The raw plain-HTTP path takes only plainly framed requests; everything else (undefined)
// goes to node:http, which refuses or forwards it as before (issue #34, decision 0128).

const parse = (text: string) => parseProxyRequestHead(Buffer.from(text, "latin1"));

describe("parseProxyRequestHead", () => {
  it("reads a GET and a POST with a Content-Length, and where the body starts", () => {
    const get = parse("GET http://a.test/x?y=1 HTTP/1.1\r\nHost: evil.test\r\nAccept: */*\r\n\r\n");
    expect(get).toMatchObject({
      method: "GET",
      bodyLength: 0,
      headers: [
        ["host", "evil.test"],
        ["accept", "*/*"],
      ],
    });
    expect(get !== undefined && get !== "incomplete" && get.url.href).toBe("http://a.test/x?y=1");
    const text = "POST http://a.test:8080/ HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello";
    expect(parse(text)).toMatchObject({
      method: "POST",
      bodyLength: 5,
      headLength: text.indexOf("hello"),
    });
  });

  it("waits for the blank line, bounded", () => {
    expect(parse("GET http://a.test/ HTTP/1.1\r\nAccept: x\r\n")).toBe("incomplete");
    expect(parse(`GET http://a.test/ HTTP/1.1\r\nX: ${"a".repeat(17_000)}`)).toBeUndefined();
  });

  it.each([
    ["CONNECT", "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n"],
    ["origin form", "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"],
    ["https URL", "GET https://a.test/ HTTP/1.1\r\n\r\n"],
    ["credentials", "GET http://u:p@a.test/ HTTP/1.1\r\n\r\n"],
    ["chunked body", "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"],
    [
      "two lengths",
      "POST http://a.test/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    ],
    ["bad length", "POST http://a.test/ HTTP/1.1\r\nContent-Length: 1x\r\n\r\n"],
    ["upgrade", "GET http://a.test/ HTTP/1.1\r\nUpgrade: websocket\r\n\r\n"],
    ["folded header", "GET http://a.test/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n"],
    ["space before colon", "GET http://a.test/ HTTP/1.1\r\nContent-Length : 5\r\n\r\n"],
    ["bare LF", "GET http://a.test/ HTTP/1.1\nX: a\r\n\r\n"],
    ["control byte", "GET http://a.test/ HTTP/1.1\r\nX: a\u0000b\r\n\r\n"],
    ["HTTP/2 line", "GET http://a.test/ HTTP/2.0\r\n\r\n"],
  ])("leaves %s to node:http", (_label, text) => {
    expect(parse(text)).toBeUndefined();
  });
});
