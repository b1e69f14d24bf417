import { createSocket } from "node:dgram";
import { isIPv4 } from "node:net";

/**
 * A DNS server for one test (UDP, A records only; AAAA and every other type get an empty
 * NOERROR answer), whose answer is a function of the name and of how many A queries for it
 * came before: a name whose address changes from one lookup to the next, driven by the
 * count of lookups, never by time (DNS rebinding, issue #34). TTL 0: nothing caches it.
 */
export type FakeDns = {
  /** A queries seen for `name` so far. */
  queries(name: string): number;
  close(): Promise<void>;
};

/** `answer(name, nth)`: the IPv4 address of the nth (from 1) A query, or undefined: NXDOMAIN. */
export type DnsAnswer = (name: string, nth: number) => string | undefined;

const TYPE_A = 1;

/** The question's name and type, and where the question ends. */
function parseQuestion(msg: Buffer): { name: string; type: number; end: number } | undefined {
  const labels: string[] = [];
  let at = 12;
  while (at < msg.length) {
    const len = msg[at] ?? 0;
    if (len === 0) break;
    if (len > 63) return undefined;
    labels.push(msg.subarray(at + 1, at + 1 + len).toString("latin1"));
    at += 1 + len;
  }
  if (at + 5 > msg.length) return undefined;
  return { name: labels.join(".").toLowerCase(), type: msg.readUInt16BE(at + 1), end: at + 5 };
}

function reply(query: Buffer, end: number, rcode: number, address?: string): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  header.writeUInt16BE(0x8180 | rcode, 2); // response, recursion desired and available
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(address === undefined ? 0 : 1, 6);
  const question = query.subarray(12, end);
  if (address === undefined) return Buffer.concat([header, question]);
  const answer = Buffer.alloc(16);
  answer.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
  answer.writeUInt16BE(TYPE_A, 2);
  answer.writeUInt16BE(1, 4); // IN
  answer.writeUInt32BE(0, 6); // TTL 0
  answer.writeUInt16BE(4, 10);
  Buffer.from(address.split(".").map(Number)).copy(answer, 12);
  return Buffer.concat([header, question, answer]);
}

/** Listens on `address`:53 (needs root; an address of the test's own, e.g. a veth's). */
export async function startFakeDns(address: string, answer: DnsAnswer): Promise<FakeDns> {
  const counts = new Map<string, number>();
  const socket = createSocket("udp4");
  socket.on("message", (msg, from) => {
    const q = msg.length >= 12 ? parseQuestion(msg) : undefined;
    if (q === undefined) return;
    let out: Buffer;
    if (q.type === TYPE_A) {
      const nth = (counts.get(q.name) ?? 0) + 1;
      counts.set(q.name, nth);
      const to = answer(q.name, nth);
      out = to !== undefined && isIPv4(to) ? reply(msg, q.end, 0, to) : reply(msg, q.end, 3);
    } else {
      out = reply(msg, q.end, 0);
    }
    socket.send(out, from.port, from.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(53, address, () => resolve());
  });
  return {
    queries: (name) => counts.get(name.toLowerCase()) ?? 0,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
