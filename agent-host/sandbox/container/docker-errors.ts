/** The HTTP status docker-modem attaches to an engine error, if any. */
export function dockerStatusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof status === "number" ? status : undefined;
}

/** No such container (404), or it is stopped or paused (409): its generation is over. */
export function isGoneError(error: unknown): boolean {
  const status = dockerStatusOf(error);
  if (status === 404 || status === 409) return true;
  // Older engines answer an exec into a stopped container with a 500 saying so.
  return status === 500 && /is not running/i.test(String((error as Error).message));
}

export function isNotFoundError(error: unknown): boolean {
  return dockerStatusOf(error) === 404;
}
