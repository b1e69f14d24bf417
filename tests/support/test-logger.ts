import { type Logger, pino } from "pino";

/** A logger for code under test: silent unless TEST_LOG_LEVEL asks for its lines. */
export function testLogger(): Logger {
  return pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
}
