import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type Docker from "dockerode";
import { RUNTIME_ASSETS_IMAGE_REPOSITORY } from "../../../agent-host/runtime/sandbox-image.ts";
import { type DoctorResult, fail, ok, skip, warn, within } from "./doctor-check.ts";
import { DOCTOR_CALL_TIMEOUT_MS } from "./service-checks.ts";

const run = promisify(execFile);

/** The container tier: the engine answers and the sandbox image is there. */
export async function dockerChecks(docker: Docker, image: string): Promise<DoctorResult[]> {
  // `within` bounds each Docker call: dockerode's version/inspect take no AbortSignal.
  const engine = await within("docker engine", DOCTOR_CALL_TIMEOUT_MS, async () => {
    const version = await docker.version();
    return ok(
      "docker engine",
      `answers (Docker ${version.Version ?? "?"}): container tier available`,
    );
  });
  if (engine.verdict !== "ok") {
    return [
      { ...engine, detail: `${engine.detail}: start dockerd, or use the process tier` },
      skip("sandbox image", "docker engine unavailable"),
    ];
  }
  const imageResult = await within("sandbox image", DOCTOR_CALL_TIMEOUT_MS, async () => {
    try {
      const info = await docker.getImage(image).inspect();
      return ok("sandbox image", `${image} present (${info.Id.slice(7, 19)})`);
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) {
        return fail(
          "sandbox image",
          image.startsWith(`${RUNTIME_ASSETS_IMAGE_REPOSITORY}:`)
            ? `${image} is missing: infra/runtime-assets/build-runtime-assets.sh builds it with the Runtime Assets (a Docker engine must answer then)`
            : `${image} is missing: load your image (docker load), or unset SANDBOX_IMAGE for the Runtime Assets' own`,
        );
      }
      throw error;
    }
  });
  return [engine, imageResult];
}

/** The process tier's first requirement: bubblewrap that can make its namespaces here. */
export async function processTierCheck(): Promise<DoctorResult> {
  return within("process tier (bubblewrap)", DOCTOR_CALL_TIMEOUT_MS, async (signal) => {
    try {
      await run(
        "bwrap",
        ["--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
        { signal },
      );
      return ok("process tier (bubblewrap)", "bwrap creates user, pid, net and mount namespaces");
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") {
        return skip(
          "process tier (bubblewrap)",
          "bwrap not installed (apt-get install bubblewrap)",
        );
      }
      return warn(
        "process tier (bubblewrap)",
        `bwrap cannot create namespaces: ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`,
      );
    }
  });
}
