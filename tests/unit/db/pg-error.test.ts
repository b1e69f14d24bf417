import { describe, expect, test } from "vitest";
import {
  constraintOf,
  PG_UNIQUE_VIOLATION,
  sqlStateOf,
  uniqueViolationConstraint,
} from "../../../shared/db/pg-error.ts";

// The one reading of driver errors both planes and the schema tests rely on.
describe("pg-error", () => {
  const postgresJs = { code: PG_UNIQUE_VIOLATION, constraint_name: "projects_pkey" };
  const check = { code: "23514", constraint_name: "skills_slug_check" };
  const wrapped = (cause: unknown) => Object.assign(new Error("Failed query"), { cause });

  test("reads the SQLSTATE and constraint of a postgres.js error, drizzle-wrapped or not", () => {
    expect([sqlStateOf(postgresJs), constraintOf(postgresJs)]).toEqual(["23505", "projects_pkey"]);
    expect([sqlStateOf(wrapped(check)), constraintOf(wrapped(check))]).toEqual([
      "23514",
      "skills_slug_check",
    ]);
    expect(uniqueViolationConstraint(wrapped(postgresJs))).toBe("projects_pkey");
    expect(uniqueViolationConstraint(wrapped(check))).toBeUndefined();
    expect(uniqueViolationConstraint({ code: PG_UNIQUE_VIOLATION })).toBe("");
  });

  test("a Node system error or a plain error is not a Postgres error", () => {
    const refused = Object.assign(new Error("connect"), { code: "ECONNREFUSED" });
    for (const error of [refused, wrapped(refused), new Error("x"), null, "23505"]) {
      expect(sqlStateOf(error)).toBeUndefined();
      expect(constraintOf(error)).toBeUndefined();
    }
  });
});
