/** One line of `workcell doctor`: a part of the node and what was found. */
export type DoctorVerdict = "ok" | "warn" | "fail" | "skip";

export type DoctorResult = {
  /** The part, by the name an operator looks for (e.g. `postgres`, `data root flock`). */
  readonly name: string;
  readonly verdict: DoctorVerdict;
  /** What was found and, when it is not ok, what to do. Never a secret. */
  readonly detail: string;
};

export const ok = (name: string, detail: string): DoctorResult => ({ name, verdict: "ok", detail });
export const warn = (name: string, detail: string): DoctorResult => ({
  name,
  verdict: "warn",
  detail,
});
export const fail = (name: string, detail: string): DoctorResult => ({
  name,
  verdict: "fail",
  detail,
});
export const skip = (name: string, detail: string): DoctorResult => ({
  name,
  verdict: "skip",
  detail,
});

const MARK: Record<DoctorVerdict, string> = {
  ok: "ok  ",
  warn: "WARN",
  fail: "FAIL",
  skip: "skip",
};

export function formatResult(r: DoctorResult): string {
  return `${MARK[r.verdict]} ${r.name}: ${r.detail}`;
}

/** Runs a check with a deadline; a check that throws or hangs is a failure of that part. */
export async function within(
  name: string,
  timeoutMs: number,
  check: (signal: AbortSignal) => Promise<DoctorResult>,
): Promise<DoctorResult> {
  const signal = AbortSignal.timeout(timeoutMs);
  let onAbort = () => {};
  const timedOut = new Promise<DoctorResult>((resolve) => {
    onAbort = () => resolve(fail(name, `no answer within ${timeoutMs / 1000} s`));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([
      check(signal).catch((error: unknown) => fail(name, messageOf(error))),
      timedOut,
    ]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

export function messageOf(error: unknown): string {
  const e = error as { name?: string; message?: string; code?: string };
  const text = e.message || e.name || e.code || String(error);
  // Connection strings can end up in driver messages: never print a password.
  return text.replace(/\/\/[^/@\s]*@/g, "//***@");
}
