import { expect, test } from "vitest";
import { formatBytes, formatCount } from "../../../sdk/cli/human-units.ts";

// `workcell usage` reads "1.2 GiB of 10 GiB", not byte counts (issue 40).
test("bytes in binary units, one decimal unless whole; counts with separators", () => {
  expect(formatBytes(0)).toBe("0 B");
  expect(formatBytes(1023)).toBe("1023 B");
  expect(formatBytes(1024)).toBe("1 KiB");
  expect(formatBytes(1_288_490_189)).toBe("1.2 GiB");
  expect(formatBytes(10 * 1024 ** 3)).toBe("10 GiB");
  expect(formatBytes(1536 * 1024)).toBe("1.5 MiB");
  expect(formatCount(1_234_567)).toBe("1,234,567");
});
