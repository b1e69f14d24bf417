import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";

/**
 * The repository infra/runtime-assets/build-runtime-assets.sh imports each build's tree
 * under, tagged with the build's key: the container tier's image from the same packages
 * as the Runtime Assets mounted at /runtime.
 */
export const RUNTIME_ASSETS_IMAGE_REPOSITORY = "workcell-sandbox";
/** The name used when no build is there to name: the container tier's preflight reports it missing. */
export const UNBUILT_RUNTIME_ASSETS_IMAGE = `${RUNTIME_ASSETS_IMAGE_REPOSITORY}:unbuilt`;

const manifestKeySchema = z.object({ key: z.string().regex(/^[0-9a-f]{8,64}$/) });

/**
 * The container tier's default image (SANDBOX_IMAGE unset): `workcell-sandbox:<key>` of
 * the Runtime Assets build at `runtimeDir` (`<build>/tree`), so a container's root is the
 * same tree, libc and loader included, as the `/runtime` it mounts, and the bash tool runs
 * that bash in both tiers. Without a readable build, UNBUILT_RUNTIME_ASSETS_IMAGE.
 */
export async function runtimeAssetsImage(runtimeDir: string): Promise<string> {
  const text = await readFile(join(runtimeDir, "..", "manifest.json"), "utf8").catch(
    () => undefined,
  );
  if (text === undefined) return UNBUILT_RUNTIME_ASSETS_IMAGE;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return UNBUILT_RUNTIME_ASSETS_IMAGE;
  }
  const manifest = manifestKeySchema.safeParse(parsed);
  return manifest.success
    ? `${RUNTIME_ASSETS_IMAGE_REPOSITORY}:${manifest.data.key}`
    : UNBUILT_RUNTIME_ASSETS_IMAGE;
}

/** The configured image, or the Runtime Assets' own. */
export async function resolveSandboxImage(p: {
  configured: string | undefined;
  runtimeDir: string;
}): Promise<string> {
  return p.configured ?? (await runtimeAssetsImage(p.runtimeDir));
}
