/**
 * A multipart/form-data body built by hand, so a test controls every filename byte (a
 * browser's FormData would escape or strip some of them).
 */
export function multipart(
  parts: readonly { name?: string; filename?: string; content: string | Uint8Array }[],
): { body: Uint8Array; contentType: string } {
  const boundary = `----wc-test-${crypto.randomUUID()}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition =
      part.filename === undefined
        ? `form-data; name="${part.name ?? "file"}"`
        : `form-data; name="${part.name ?? "file"}"; filename="${part.filename}"`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n`));
    if (part.filename !== undefined) {
      chunks.push(Buffer.from("Content-Type: application/octet-stream\r\n"));
    }
    chunks.push(Buffer.from("\r\n"));
    chunks.push(Buffer.from(part.content));
    chunks.push(Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    body: new Uint8Array(Buffer.concat(chunks)),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}
