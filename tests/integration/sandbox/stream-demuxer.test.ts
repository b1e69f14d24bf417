// Pure logic, kept next to the exec tests it supports (this folder is the sandbox's).
import fc from "fast-check";
import { expect, it } from "vitest";
import { createDemuxer } from "../../../agent-host/sandbox/container/stream-demuxer.ts";
import { OutputCapture } from "../../../agent-host/sandbox/instance/output-capture.ts";

function frame(stream: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

it("demuxes frames however the socket splits them", () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.constantFrom(1, 2), fc.uint8Array({ maxLength: 50 })), {
        maxLength: 20,
      }),
      fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 30 }),
      (frames, cuts) => {
        const wire = Buffer.concat(frames.map(([s, p]) => frame(s, Buffer.from(p))));
        const got = { 1: [] as Buffer[], 2: [] as Buffer[] };
        const feed = createDemuxer((s, p) => got[s as 1 | 2].push(Buffer.from(p)));
        let at = 0;
        for (let i = 0; at < wire.length; i++) {
          const size = cuts[i % cuts.length] ?? 1;
          feed(wire.subarray(at, at + size));
          at += size;
        }
        for (const s of [1, 2] as const) {
          const want = Buffer.concat(
            frames.filter(([id]) => id === s).map(([, p]) => Buffer.from(p)),
          );
          expect(Buffer.concat(got[s])).toEqual(want);
        }
      },
    ),
  );
});

it("keeps the first maxBytes of a stream, streams exactly those, and counts the rest", () => {
  const streamed: Buffer[] = [];
  const capture = new OutputCapture(5, (c) => streamed.push(c));
  for (const part of ["ab", "cde", "fgh", "", "i"]) capture.push(Buffer.from(part));
  const out = capture.result();
  expect(out.bytes.toString()).toBe("abcde");
  expect(Buffer.concat(streamed).toString()).toBe("abcde");
  expect(out).toMatchObject({ totalBytes: 9, droppedBytes: 4 });
});
