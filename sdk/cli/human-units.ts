const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 1288490189 → "1.2 GiB"; whole units drop the decimal ("10 GiB"). */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = unit === 0 || Number.isInteger(value) ? String(value) : value.toFixed(1);
  return `${text.replace(/\.0$/, "")} ${BYTE_UNITS[unit]}`;
}

/** 1234567 → "1,234,567". */
export function formatCount(n: number): string {
  return n.toLocaleString("en");
}
