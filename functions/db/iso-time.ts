/** RFC 3339 in UTC, the API's time format. */
export function isoTime(date: Date): string {
  return date.toISOString();
}

export function optionalIsoTime(date: Date | null): string | undefined {
  return date === null ? undefined : date.toISOString();
}
