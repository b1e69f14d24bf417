import postgres from "postgres";
import {
  type PausableProxy,
  type PausableProxyOptions,
  startPausableProxy,
} from "./pausable-proxy.ts";

/**
 * A postgres.js client of the database at `url` whose every connection goes through a
 * pausable proxy, so a test can pause or cut the database for that client alone (the
 * database outage tests of issue 38). connect_timeout is short: a refused reconnect fails
 * within the test's bounds.
 */
export async function proxiedPostgres(
  url: string,
  options: PausableProxyOptions = {},
  max = 12,
): Promise<{ proxy: PausableProxy; client: postgres.Sql }> {
  const target = new URL(url);
  const proxy = await startPausableProxy(
    { host: target.hostname, port: Number(target.port) },
    options,
  );
  const via = new URL(url);
  via.port = String(proxy.port);
  const client = postgres(via.toString(), { max, onnotice: () => {}, connect_timeout: 2 });
  return { proxy, client };
}
