import { describe, expect, test } from "vitest";
import { createBodyGuard } from "../../../../agent-host/secrets/body-guard.ts";

// The streaming body scan of the exfiltration guard (decision 0134): a placeholder split
// across chunks is found before any whole copy of it was passed on.
const needle = Buffer.from(`wcs_${"ab".repeat(20)}`);

function feed(chunks: Buffer[]) {
  const guard = createBodyGuard([needle]);
  const passed: Buffer[] = [];
  for (const chunk of chunks) {
    const safe = guard.push(chunk);
    if (safe === undefined) return { hit: true, passed: Buffer.concat(passed) };
    passed.push(safe);
  }
  passed.push(guard.end());
  return { hit: false, passed: Buffer.concat(passed) };
}

describe("body guard", () => {
  test("a body without the placeholder passes whole, in order", () => {
    const body = Buffer.from("x".repeat(100_000));
    const parts = [body.subarray(0, 7), body.subarray(7, 60_000), body.subarray(60_000)];
    expect(feed(parts)).toEqual({ hit: false, passed: body });
  });

  test("split at every position across two chunks, the placeholder is found and never passed whole", () => {
    const body = Buffer.concat([Buffer.from("t="), needle, Buffer.from("&more")]);
    for (let cut = 1; cut < body.length; cut++) {
      const out = feed([body.subarray(0, cut), body.subarray(cut)]);
      expect(out.hit, `cut at ${cut}`).toBe(true);
      expect(out.passed.includes(needle)).toBe(false);
    }
  });

  test("one byte at a time still finds it", () => {
    const body = Buffer.concat([Buffer.from("prefix "), needle]);
    const out = feed([...body].map((byte) => Buffer.from([byte])));
    expect(out.hit).toBe(true);
    expect(out.passed.length).toBeLessThan(body.length);
  });
});
