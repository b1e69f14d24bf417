/** RFC 9110 `token` characters. */
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
/** `type/subtype` with optional `; name=value` parameters (value a token or a quoted string). */
const MEDIA_TYPE = new RegExp(
  `^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"[^"\\\\\\r\\n]*"))*$`,
);

/**
 * Why a declared content type cannot be used, or undefined. It becomes a header the
 * presigned PUT must send exactly (and that S3 serves back later), so only a well-formed
 * media type is accepted: no line breaks or other characters a header cannot carry.
 */
export function contentTypeProblem(contentType: string): string | undefined {
  if (!MEDIA_TYPE.test(contentType)) {
    return "must be a media type like `application/pdf` or `text/plain; charset=utf-8`";
  }
  return undefined;
}
