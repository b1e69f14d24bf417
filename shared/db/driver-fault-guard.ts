// A process-level guarantee that one database connection's failure cannot end the process
// (decision 0111). postgres.js runs parts of its protocol from timers and socket events; an
// error thrown there has no caller to reject, so Node's default ends the process, taking
// every run of the node with it for a fault that concerns one pooled connection. The known
// case is patched at install (scripts/patch-postgres.mjs); this guard covers the class.

/** The least a guard needs of a logger (pino's shape). */
export type DriverFaultLogger = {
  error(fields: object, message: string): void;
  fatal(fields: object, message: string): void;
};

export type DriverFaultGuardDeps = {
  logger: DriverFaultLogger;
  /** Ends the process for every other uncaught error (Node's default, logged first). */
  exit: (code: number) => void;
  /** Counted once a driver fault is contained (a metric). */
  onContained?: () => void;
};

const DRIVER_FRAME = /[\\/]node_modules[\\/]postgres[\\/](?:cjs[\\/]|cf[\\/])?src[\\/]/;

/**
 * True when the error was thrown by the database driver's own code: the innermost frame of
 * its stack is in postgres.js. A query's rejection never reaches here (its caller awaits it);
 * an application callback the driver called is not the driver's fault (its frame is innermost).
 */
export function isDatabaseDriverFault(error: unknown): boolean {
  if (!(error instanceof Error) || typeof error.stack !== "string") return false;
  const innermost = error.stack.split("\n").find((line) => line.trimStart().startsWith("at "));
  return innermost !== undefined && DRIVER_FRAME.test(innermost);
}

/**
 * Installs the process's uncaught-exception handler: a driver fault is logged and contained
 * (its connection is already closed and its queries rejected; the pool opens a new one), any
 * other error is logged and ends the process as Node would. Returns the uninstaller.
 */
export function guardDatabaseDriverFaults(deps: DriverFaultGuardDeps): () => void {
  // `origin` says whether it was thrown or a promise nobody handled ("unhandledRejection"):
  // a rejection carries the stack of where its error was made, not of who dropped it.
  const handler = (error: unknown, origin: NodeJS.UncaughtExceptionOrigin) => {
    if (isDatabaseDriverFault(error)) {
      deps.onContained?.();
      deps.logger.error(
        { err: error, origin },
        "a database connection failed outside any query; that connection is dropped and the pool opens a new one, so the process keeps running",
      );
      return;
    }
    deps.logger.fatal(
      { err: error, origin },
      "uncaught error; the process ends (its service restarts it)",
    );
    deps.exit(1);
  };
  process.on("uncaughtException", handler);
  return () => process.off("uncaughtException", handler);
}
