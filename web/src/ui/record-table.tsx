import type { ReactNode } from "react";
import { ErrorMessage } from "./error-message.tsx";

/** What a list page knows about its records: the query's state, as react-query gives it. */
export interface RecordList<T> {
  readonly isPending: boolean;
  readonly error: unknown;
  readonly data: readonly T[] | undefined;
}

/**
 * A page's list of records (tokens, secrets) with the states a person must be able to tell
 * apart: still loading, the server refused, none yet, and the table. `row` gives one record's
 * cells after its key; the last column is for the record's actions and has no heading.
 */
export function RecordTable<T>(p: {
  list: RecordList<T>;
  /** "tokens", "secrets": in "Loading tokens…", "Cannot list your tokens", "No tokens yet." */
  noun: string;
  headings: readonly string[];
  testId: string;
  rowKey: (record: T) => string;
  rowAttributes?: (record: T) => Record<string, string>;
  row: (record: T) => ReactNode;
}) {
  const { isPending, error, data } = p.list;
  return (
    <>
      {isPending && <p className="muted">Loading {p.noun}…</p>}
      <ErrorMessage error={error} title={`Cannot list your ${p.noun}`} />
      {data !== undefined && data.length === 0 && <p className="empty">No {p.noun} yet.</p>}
      {data !== undefined && data.length > 0 && (
        <table className="file-table" data-testid={p.testId}>
          <thead>
            <tr>
              {p.headings.map((heading) => (
                <th key={heading}>{heading}</th>
              ))}
              <th />
            </tr>
          </thead>
          <tbody>
            {data.map((record) => (
              <tr key={p.rowKey(record)} {...p.rowAttributes?.(record)}>
                {p.row(record)}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
