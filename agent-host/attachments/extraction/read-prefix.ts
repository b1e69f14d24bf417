import type { WorkspaceFs } from "../../workspace/workspace-fs.ts";

export interface FilePrefix {
  readonly bytes: Uint8Array;
  /** The file has more than the bytes returned. */
  readonly truncated: boolean;
}

/**
 * The first `maxBytes` of a Workdir file, read through the safe file layer (no-follow,
 * regular files only) with a byte range, so a large file is never read past the bound.
 */
export async function readPrefix(
  fs: WorkspaceFs,
  path: string,
  maxBytes: number,
  signal: AbortSignal,
): Promise<FilePrefix> {
  const reader = await fs.openRead(path, { signal });
  try {
    const size = reader.info.size;
    const length = Math.min(size, maxBytes);
    if (length === 0) return { bytes: new Uint8Array(0), truncated: size > 0 };
    const bytes = new Uint8Array(length);
    let filled = 0;
    for await (const chunk of reader.stream({ range: { start: 0, end: length - 1 }, signal })) {
      const take = Math.min(chunk.byteLength, length - filled);
      bytes.set(chunk.subarray(0, take), filled);
      filled += take;
    }
    return { bytes: bytes.subarray(0, filled), truncated: size > filled };
  } finally {
    reader.close();
  }
}
