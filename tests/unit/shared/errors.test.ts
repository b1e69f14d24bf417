import { describe, expect, test } from "vitest";
import {
  DOMAIN_ERRORS,
  domainError,
  domainReasonOf,
  ERROR_CATALOGUE,
  ERROR_CODES,
  httpStatusOf,
  httpStatusOfError,
  isErrorCode,
  queueDisposition,
  toErrorBody,
  WorkcellError,
} from "../../../shared/errors/index.ts";

// The wire contract of docs/api.md, written out independently of the implementation.
const API_STATUS = {
  invalid_request: 400,
  unprocessable: 422,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  quota_exceeded: 507,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
} as const;

describe("error catalogue", () => {
  test("has exactly the codes of docs/api.md with their HTTP statuses", () => {
    expect([...ERROR_CODES].sort()).toEqual(Object.keys(API_STATUS).sort());
    for (const [code, status] of Object.entries(API_STATUS)) {
      expect(ERROR_CATALOGUE[code as keyof typeof API_STATUS].httpStatus).toBe(status);
      expect(httpStatusOf(code as keyof typeof API_STATUS)).toBe(status);
    }
  });

  test("only transient failures are retryable", () => {
    const retryable = ERROR_CODES.filter((code) => ERROR_CATALOGUE[code].retryable);
    expect(retryable.sort()).toEqual(["internal", "rate_limited", "unavailable"]);
  });

  test("every default message says how to fix the problem (has a remedy after ':')", () => {
    for (const code of ERROR_CODES) {
      const message = ERROR_CATALOGUE[code].message;
      expect(message).toMatch(/^[A-Z].*: .+\.$/);
    }
  });

  test("is frozen", () => {
    expect(Object.isFrozen(ERROR_CATALOGUE)).toBe(true);
  });

  test("isErrorCode recognises codes only", () => {
    expect(isErrorCode("conflict")).toBe(true);
    expect(isErrorCode("Conflict")).toBe(false);
    expect(isErrorCode("toString")).toBe(false);
    expect(isErrorCode(409)).toBe(false);
  });
});

describe("WorkcellError", () => {
  test("carries name, code, message, details and cause", () => {
    const cause = new Error("socket hang up");
    const err = new WorkcellError("conflict", "Name taken: pick another.", {
      details: { name: "a.txt" },
      cause,
    });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("WorkcellError");
    expect(err.code).toBe("conflict");
    expect(err.message).toBe("Name taken: pick another.");
    expect(err.details).toEqual({ name: "a.txt" });
    expect(err.cause).toBe(cause);
    expect(err.httpStatus).toBe(409);
    expect(err.retryable).toBe(false);
    expect(String(err)).toBe("WorkcellError: Name taken: pick another.");
  });

  test("defaults to the catalogue message and has no cause when none is given", () => {
    const err = new WorkcellError("rate_limited");
    expect(err.message).toBe(ERROR_CATALOGUE.rate_limited.message);
    expect("cause" in err).toBe(false);
    expect(err.details).toBeUndefined();
    expect(err.retryable).toBe(true);
  });
});

describe("toErrorBody", () => {
  test("produces exactly {error: {code, message}} without details", () => {
    const body = toErrorBody(new WorkcellError("not_found", "No such thread: check the id."));
    expect(body).toStrictEqual({
      error: { code: "not_found", message: "No such thread: check the id." },
    });
    expect(JSON.parse(JSON.stringify(body))).toStrictEqual(body);
  });

  test("includes details when present", () => {
    const body = toErrorBody(
      new WorkcellError("invalid_request", "Bad path.", { details: { rule: "absolute" } }),
    );
    expect(body).toStrictEqual({
      error: { code: "invalid_request", message: "Bad path.", details: { rule: "absolute" } },
    });
  });

  test("unknown errors become internal with a generic message (no SQL, no stack)", () => {
    const sqlError = new Error('duplicate key value violates unique constraint "users_pkey"');
    for (const thrown of [
      sqlError,
      new TypeError("x is undefined"),
      "a string",
      null,
      { code: "conflict" },
    ]) {
      const body = toErrorBody(thrown);
      expect(body).toStrictEqual({
        error: { code: "internal", message: ERROR_CATALOGUE.internal.message },
      });
      const text = JSON.stringify(body);
      expect(text).not.toContain("users_pkey");
      expect(text).not.toMatch(/\n\s+at /);
      expect(httpStatusOfError(thrown)).toBe(500);
    }
  });

  test("a WorkcellError coded internal does not leak its message or details either", () => {
    const err = new WorkcellError("internal", "SELECT * FROM secrets failed", {
      details: { sql: "SELECT * FROM secrets" },
    });
    const body = toErrorBody(err);
    expect(body.error.message).toBe(ERROR_CATALOGUE.internal.message);
    expect(body.error.details).toBeUndefined();
  });

  test("a WorkcellError's cause is never serialised", () => {
    const err = new WorkcellError("unavailable", undefined, {
      cause: new Error("ECONNREFUSED 10.0.0.7"),
    });
    expect(JSON.stringify(toErrorBody(err))).not.toContain("ECONNREFUSED");
    expect(httpStatusOfError(err)).toBe(503);
  });
});

describe("queueDisposition", () => {
  test("retries transient codes and dead-letters the rest", () => {
    expect(queueDisposition("unavailable")).toBe("retry");
    expect(queueDisposition("rate_limited")).toBe("retry");
    expect(queueDisposition("internal")).toBe("retry");
    expect(queueDisposition("invalid_request")).toBe("dead_letter");
    expect(queueDisposition("not_found")).toBe("dead_letter");
    expect(queueDisposition("conflict")).toBe("dead_letter");
  });

  test("agrees with the catalogue's retryable flag for every code", () => {
    for (const code of ERROR_CODES) {
      expect(queueDisposition(code)).toBe(
        ERROR_CATALOGUE[code].retryable ? "retry" : "dead_letter",
      );
    }
  });

  test("throws on a value outside the catalogue (the exhaustive switch's default)", () => {
    expect(() => queueDisposition("bogus" as never)).toThrow(/unhandled error code/);
  });
});

describe("domain errors", () => {
  test("SandboxIdentityMismatch maps to conflict (409) and names itself in details", () => {
    const err = domainError("sandbox_identity_mismatch", { details: { runtime_scope_id: "t1" } });
    expect(err).toBeInstanceOf(WorkcellError);
    expect(err.code).toBe("conflict");
    expect(err.httpStatus).toBe(409);
    expect(err.details).toEqual({ runtime_scope_id: "t1", reason: "sandbox_identity_mismatch" });
    expect(domainReasonOf(err)).toBe("sandbox_identity_mismatch");
    expect(toErrorBody(err).error.details).toEqual({
      runtime_scope_id: "t1",
      reason: "sandbox_identity_mismatch",
    });
  });

  test("the reason cannot be overwritten through details", () => {
    const err = domainError("stale_generation", { details: { reason: "something_else" } });
    expect(err.details?.reason).toBe("stale_generation");
  });

  test("a custom message replaces the default; the code stays", () => {
    const err = domainError("no_isolation_available", { message: "Docker is down: start it." });
    expect(err.message).toBe("Docker is down: start it.");
    expect(err.code).toBe("unavailable");
    expect(queueDisposition(err.code)).toBe("retry");
  });

  test("every reason maps to a catalogue code and has a remedy", () => {
    for (const [reason, spec] of Object.entries(DOMAIN_ERRORS)) {
      expect(reason).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(ERROR_CODES).toContain(spec.code);
      expect(spec.message).toMatch(/: .+\.$/);
    }
  });

  test("domainReasonOf ignores other errors and unknown reasons", () => {
    expect(domainReasonOf(new Error("x"))).toBeUndefined();
    expect(domainReasonOf(new WorkcellError("conflict"))).toBeUndefined();
    expect(
      domainReasonOf(new WorkcellError("conflict", "x", { details: { reason: "hasOwnProperty" } })),
    ).toBeUndefined();
  });
});
