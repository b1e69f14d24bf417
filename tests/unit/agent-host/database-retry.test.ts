import pino from "pino";
import { describe, expect, test } from "vitest";
import { retryDatabase } from "../../../shared/db/database-retry.ts";
import { isTransientDatabaseError } from "../../../shared/db/transient-database-error.ts";

const silent = pino({ level: "silent" });
const coded = (code: string) => Object.assign(new Error(code), { code });
const wrapped = (cause: unknown) => new Error("Failed query: update …", { cause });

describe("isTransientDatabaseError", () => {
  test("a connection that went away, was refused, or a server restarting is transient", () => {
    for (const code of ["CONNECTION_CLOSED", "CONNECT_TIMEOUT", "ECONNREFUSED", "57P01", "08006"]) {
      expect(isTransientDatabaseError(wrapped(coded(code)))).toBe(true);
    }
    const timedOut = new Error("run ending did not answer in time", {
      cause: new DOMException("timed out", "TimeoutError"),
    });
    expect(isTransientDatabaseError(timedOut)).toBe(true);
  });

  test("what the statement itself caused never is (a constraint, a bug, a fence)", () => {
    for (const code of ["23505", "23503", "42P01", "lease_lost"]) {
      expect(isTransientDatabaseError(wrapped(coded(code)))).toBe(false);
    }
    expect(isTransientDatabaseError(new TypeError("x is undefined"))).toBe(false);
  });
});

describe("retryDatabase", () => {
  const policy = { attemptTimeoutMs: 1_000, maxDelayMs: 5, giveUpAfterMs: 60_000 };

  test("tries again after transient failures and tells the attempt how many there were", async () => {
    const seen: number[] = [];
    const value = await retryDatabase(policy, "probe", silent, async (_signal, { failures }) => {
      seen.push(failures);
      if (failures < 2) throw coded("CONNECTION_CLOSED");
      return "ok";
    });
    expect(value).toBe("ok");
    expect(seen).toEqual([0, 1, 2]);
  });

  test("a non-transient error is thrown at once, untried", async () => {
    let tries = 0;
    const refused = coded("23505");
    await expect(
      retryDatabase(policy, "probe", silent, async () => {
        tries++;
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(tries).toBe(1);
  });

  test("gives up with the last transient error once the bound has passed", async () => {
    const closed = coded("ECONNREFUSED");
    await expect(
      retryDatabase({ ...policy, giveUpAfterMs: 0 }, "probe", silent, async () => {
        throw closed;
      }),
    ).rejects.toBe(closed);
  });
});
