import { request } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";

// Clients of the egress proxy speaking to a sandbox's Unix socket directly (the relay
// inside a sandbox adds nothing but a TCP hop; the tier tests go through it).

export type Answer = { status: number; body: string };

/** A plain-HTTP proxy request (absolute URL), with optional extra headers. */
export function proxyGet(
  socketPath: string,
  url: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: url, headers, timeout: 20_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      );
      res.on("error", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

/** Bytes of a GET that the proxy may cut: how many arrived before the end or the cut. */
export function proxyDownload(socketPath: string, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path: url, timeout: 30_000 }, (res) => {
      let bytes = 0;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
      });
      res.on("end", () => resolve(bytes));
      res.on("close", () => resolve(bytes));
      res.on("error", () => resolve(bytes));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

/** CONNECT `authority`; the status, the refusal body if any, and the tunnel when 200. */
export function proxyConnect(
  socketPath: string,
  authority: string,
): Promise<Answer & { socket?: Socket }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method: "CONNECT", path: authority, timeout: 20_000 });
    req.on("connect", (res, socket: Socket, head: Buffer) => {
      if (res.statusCode === 200) {
        if (head.length > 0) socket.unshift(head);
        return resolve({ status: 200, body: "", socket });
      }
      const chunks: Buffer[] = [head];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.on("close", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

/** An HTTPS GET inside a CONNECT tunnel, verifying the fake internet's certificate. */
export function httpsOverTunnel(
  tunnel: Socket,
  servername: string,
  ca: string,
  hostHeader = servername,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const tls = tlsConnect({ socket: tunnel, servername, ca }, () => {
      tls.write(`GET /tls HTTP/1.1\r\nhost: ${hostHeader}\r\nconnection: close\r\n\r\n`);
    });
    const chunks: Buffer[] = [];
    tls.on("data", (chunk: Buffer) => chunks.push(chunk));
    tls.on("end", () => resolve(Buffer.concat(chunks).toString()));
    tls.on("error", reject);
  });
}

/** A SOCKS5 CONNECT by name (ATYP 3) or IPv4 (ATYP 1); the reply code (0 = granted). */
export function socksConnect(
  socketPath: string,
  host: string,
  port: number,
): Promise<{ code: number; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(socketPath);
    const v4 = /^\d+\.\d+\.\d+\.\d+$/.test(host);
    const address = v4
      ? Buffer.from([1, ...host.split(".").map(Number)])
      : Buffer.concat([Buffer.from([3, Buffer.byteLength(host)]), Buffer.from(host)]);
    const portBytes = Buffer.from([port >> 8, port & 255]);
    let stage = 0;
    let buffered = Buffer.alloc(0);
    socket.on("connect", () => socket.write(Buffer.from([5, 1, 0])));
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (stage === 0 && buffered.length >= 2) {
        buffered = buffered.subarray(2);
        stage = 1;
        socket.write(Buffer.concat([Buffer.from([5, 1, 0]), address, portBytes]));
      }
      if (stage === 1 && buffered.length >= 10) {
        stage = 2;
        socket.removeAllListeners("data");
        if (buffered.length > 10) socket.unshift(buffered.subarray(10));
        resolve({ code: buffered[1] ?? 255, socket });
      }
    });
    socket.on("close", () => {
      if (stage < 2) resolve({ code: 255, socket });
    });
    socket.on("error", (error) => {
      if (stage < 2) reject(error);
    });
  });
}

/** Writes `text` into an echo tunnel and reads it back. */
export function echo(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = "";
    socket.on("data", (chunk: Buffer) => {
      got += chunk.toString();
      if (got.length >= text.length) {
        socket.destroy();
        resolve(got);
      }
    });
    socket.on("error", reject);
    socket.write(text);
  });
}
