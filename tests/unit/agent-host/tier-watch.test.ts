import pino from "pino";
import { describe, expect, it } from "vitest";
import { TierWatch } from "../../../agent-host/node/tier-watch.ts";
import { isConnectionError } from "../../../agent-host/sandbox/container/docker-call.ts";

const logger = pino({ level: "silent" });
const signal = () => AbortSignal.timeout(5_000);

describe("TierWatch", () => {
  it("names the tiers that stopped answering, and whether another still does (decision 0114)", async () => {
    let answer: string[] = ["container", "process"];
    const watch = new TierWatch({
      expected: ["container", "process"],
      probe: async () => answer,
      logger,
    });
    await watch.probe(signal());
    expect(watch.missing).toEqual([]);
    expect(watch.someTierAnswers).toBe(true);
    answer = ["process"];
    await watch.probe(signal());
    expect(watch.missing).toEqual(["container"]);
    expect(watch.someTierAnswers).toBe(true);
    answer = [];
    await watch.probe(signal());
    expect(watch.missing).toEqual(["container", "process"]);
    expect(watch.someTierAnswers).toBe(false);
  });

  it("is degraded while a tier it started with does not answer, and recovers once", async () => {
    let answer: string[] | Error = ["container", "process"];
    let recovered = 0;
    const watch = new TierWatch({
      expected: ["container", "process"],
      probe: async () => {
        if (answer instanceof Error) throw answer;
        return answer;
      },
      onRecovered: async () => {
        recovered++;
      },
      logger,
    });
    expect(await watch.probe(signal())).toEqual(["container", "process"]);
    expect(watch.degraded).toBe(false);

    answer = ["process"];
    expect(await watch.probe(signal())).toEqual(["process"]);
    expect(watch.degraded).toBe(true);
    // A probe that throws found nothing.
    answer = new Error("ping hung");
    expect(await watch.probe(signal())).toEqual([]);
    expect(watch.degraded).toBe(true);
    expect(recovered).toBe(0);

    answer = ["container", "process"];
    await watch.probe(signal());
    await watch.probe(signal());
    await watch.settled();
    expect(watch.degraded).toBe(false);
    expect(recovered).toBe(1);
  });

  it("a node started with no tier is never degraded (its runs fail no_isolation_available)", async () => {
    const watch = new TierWatch({ expected: [], probe: async () => [], logger });
    expect(await watch.probe(signal())).toEqual([]);
    expect(watch.degraded).toBe(false);
  });

  it("a failing recovery is logged, not thrown, and the node is not degraded", async () => {
    let answer: string[] = [];
    const watch = new TierWatch({
      expected: ["container"],
      probe: async () => answer,
      onRecovered: async () => {
        throw new Error("reconcile failed");
      },
      logger,
    });
    await watch.probe(signal());
    answer = ["container"];
    await watch.probe(signal());
    await expect(watch.settled()).resolves.toBeUndefined();
    expect(watch.degraded).toBe(false);
  });
});

describe("isConnectionError", () => {
  it("is a failure of the socket, never an answer of the engine", () => {
    expect(isConnectionError(Object.assign(new Error("connect"), { code: "ECONNREFUSED" }))).toBe(
      true,
    );
    expect(isConnectionError(Object.assign(new Error("connect"), { code: "ENOENT" }))).toBe(true);
    expect(isConnectionError(new Error("socket hang up"))).toBe(true);
    // An engine answer (HTTP status) is not an outage, whatever its text.
    expect(isConnectionError(Object.assign(new Error("socket hang up"), { statusCode: 500 }))).toBe(
      false,
    );
    expect(isConnectionError(Object.assign(new Error("x"), { code: "EACCES" }))).toBe(false);
    expect(isConnectionError(undefined)).toBe(false);
  });
});
