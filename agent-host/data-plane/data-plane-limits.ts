import { DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC } from "../../shared/capability/capability-limits.ts";
import {
  DEFAULT_MAX_BATCH_FILES,
  DEFAULT_MAX_LIST_ENTRIES,
  DEFAULT_MAX_WRITE_BYTES,
} from "../workspace/workspace-limits.ts";

/**
 * Every bound of the data-plane HTTP API, named with its unit; `createDataPlaneApp` takes a
 * partial override so tests can shrink any of them.
 */
export interface DataPlaneLimits {
  /** `PUT /dp/v1/files/content`: largest file, streamed to disk (never held in memory). */
  readonly maxUploadBytes: number;
  /**
   * `POST /dp/v1/files/batch`: the whole multipart body. It is parsed in memory (a batch must
   * be validated as a whole before anything is written), so this is also the memory a batch
   * request can take; large files go through the streamed PUT.
   */
  readonly maxBatchBodyBytes: number;
  /** `POST /dp/v1/files/batch`: most files in one batch. */
  readonly maxBatchFiles: number;
  /** JSON bodies of the internal endpoints (`{workdir_path}`: at most a 4 KiB path). */
  readonly maxJsonBodyBytes: number;
  /** `GET /dp/v1/files`: most directory entries read for one listing. */
  readonly maxListEntries: number;
  /** A `Range` header longer than this is ignored (the full file is sent). */
  readonly maxRangeHeaderChars: number;
  /** Clock skew tolerated when checking a capability's `iat` and `exp`. */
  readonly clockToleranceSec: number;
}

export const DEFAULT_MAX_BATCH_BODY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_JSON_BODY_BYTES = 16 * 1024;
export const DEFAULT_MAX_RANGE_HEADER_CHARS = 256;

export const DEFAULT_DATA_PLANE_LIMITS: DataPlaneLimits = Object.freeze({
  maxUploadBytes: DEFAULT_MAX_WRITE_BYTES,
  maxBatchBodyBytes: DEFAULT_MAX_BATCH_BODY_BYTES,
  maxBatchFiles: DEFAULT_MAX_BATCH_FILES,
  maxJsonBodyBytes: DEFAULT_MAX_JSON_BODY_BYTES,
  maxListEntries: DEFAULT_MAX_LIST_ENTRIES,
  maxRangeHeaderChars: DEFAULT_MAX_RANGE_HEADER_CHARS,
  clockToleranceSec: DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC,
});
