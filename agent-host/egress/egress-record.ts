import type { EgressSandbox } from "./egress-sandbox.ts";

export type EgressProtocol = "http" | "connect" | "socks5";

/** One connection as audited (a `network_requests` row, a `network.request` run event). */
export type EgressRecord = {
  readonly sandbox: EgressSandbox;
  readonly host: string;
  readonly port: number;
  readonly address: string | null;
  readonly protocol: EgressProtocol;
  readonly decision: "allowed" | "denied";
  /** Why refused, or why an allowed connection was cut (egress_bytes_per_run, idle_timeout). */
  readonly reason: string | null;
  readonly bytesUp: number;
  readonly bytesDown: number;
  readonly durationMs: number;
  readonly startedAt: Date;
};

/** Where records go; must not throw (the proxy calls it from socket callbacks). */
export type EgressAudit = (record: EgressRecord) => void;
