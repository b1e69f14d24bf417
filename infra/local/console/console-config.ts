import type { ConsoleConfig } from "../../../shared/contracts/console-config.ts";

/** Path of the local dev-token endpoint (local mode only; never part of a cloud entry). */
export const LOCAL_DEV_TOKEN_PATH = "/local/dev-token";
/** Same-origin path that forwards browser uploads to the S3 emulator (local mode only). */
export const LOCAL_S3_PROXY_PATH = "/local/s3";

/** The local Workcell's `/config.json` (shape: shared/contracts/console-config.ts). */
export const LOCAL_CONSOLE_CONFIG: ConsoleConfig = {
  mode: "local",
  api_base_url: null,
  dev_token_url: LOCAL_DEV_TOKEN_PATH,
};
