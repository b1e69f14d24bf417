/**
 * Every limit of the control plane, with units in the names. Defaults suit production;
 * tests and entries override single values through `AppDeps.limits`.
 */
export type AppLimits = {
  /**
   * Largest request body. A run input may be MAX_RUN_INPUT_CHARS (200k UTF-16 units),
   * up to 3 bytes each in UTF-8 and more once JSON-escaped, so 2 MiB leaves room for the
   * largest valid body while refusing anything absurd before it is parsed.
   */
  maxBodyBytes: number;
  /** How long a submission waits for SQS before leaving the dispatch to the sweeper. */
  queueSendTimeoutMs: number;
  /**
   * Root runs of one uid that may wait to start (pending); a submission past it is 429
   * `queued_runs_limit`. Counted without a lock, so concurrent submissions of one uid may
   * pass it by as many as are in flight at once.
   */
  maxQueuedRunsPerUid: number;
  /** Retry-After of that 429: a slot of the uid frees when one of its runs ends. */
  queuedRunsRetryAfterSeconds: number;
  /** Event streams one uid may have open at once (all instances); one more is 429. */
  maxEventStreamsPerUid: number;
  /** Event stream: first wait after finding no new events, doubled up to the max. */
  eventPollMinMs: number;
  eventPollMaxMs: number;
  /**
   * The same bound while a LISTEN is up (a NOTIFY wakes the stream): the re-read is then
   * only the fallback for a lost notification or a worker that died without its terminal
   * event, and bounds how stale such a stream can be (decision 0159).
   */
  eventPollNotifiedMaxMs: number;
  /** Comment line sent when nothing else was, so proxies do not cut an idle stream. */
  eventKeepAliveMs: number;
  /**
   * A stream ends after this long even if the run has not; the client resumes with
   * Last-Event-ID. Keeps one request within every runtime's duration limit.
   */
  eventStreamMaxMs: number;
  /** Events read per query. */
  eventBatchSize: number;
  /** Lifetime of an event-stream ticket; at most MAX_EVENT_TICKET_TTL_SECONDS (1 h). */
  eventTicketTtlSeconds: number;
};

export const DEFAULT_APP_LIMITS: AppLimits = {
  maxBodyBytes: 2 * 1024 * 1024,
  queueSendTimeoutMs: 3_000,
  maxQueuedRunsPerUid: 200,
  maxEventStreamsPerUid: 32,
  queuedRunsRetryAfterSeconds: 10,
  eventPollMinMs: 100,
  eventPollMaxMs: 1_000,
  eventPollNotifiedMaxMs: 8_000,
  eventKeepAliveMs: 15_000,
  eventStreamMaxMs: 10 * 60_000,
  eventBatchSize: 200,
  eventTicketTtlSeconds: 3_600,
};
