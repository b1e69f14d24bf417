import { expect } from "vitest";
import {
  constraintOf,
  PG_CHECK_VIOLATION,
  PG_FOREIGN_KEY_VIOLATION,
  PG_UNIQUE_VIOLATION,
  sqlStateOf,
} from "../../../shared/db/pg-error.ts";

// How the schema tests check a refusal: the query fails with this SQLSTATE, naming this
// constraint (the same reading of driver errors the planes use).
export async function expectViolation(
  query: PromiseLike<unknown>,
  code: string,
  constraint: string,
): Promise<void> {
  const error = await Promise.resolve(query).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected ${constraint} to reject the row`).toBeDefined();
  expect({ code: sqlStateOf(error), constraint: constraintOf(error) }).toEqual({
    code,
    constraint,
  });
}

export const UNIQUE = PG_UNIQUE_VIOLATION;
export const FOREIGN_KEY = PG_FOREIGN_KEY_VIOLATION;
export const CHECK = PG_CHECK_VIOLATION;
