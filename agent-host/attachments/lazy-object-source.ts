/**
 * The object vanished or changed between HEAD and GET. Its own class (with no `code`), so
 * the write layer passes it through unchanged.
 */
export class ObjectUnavailable extends Error {
  override readonly name = "ObjectUnavailable";
}

/**
 * A write source that opens the object only when the writer starts reading it, and
 * releases it however the write ends (the generator's `finally` runs on early return).
 */
export function lazyObjectSource(
  open: () => Promise<AsyncIterable<Uint8Array> | "missing" | "changed">,
): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      const body = await open();
      if (body === "missing" || body === "changed") {
        throw new ObjectUnavailable(`the object is ${body === "missing" ? "gone" : "changed"}`);
      }
      yield* body;
    },
  };
}
