import Docker from "dockerode";
import { inject } from "vitest";

/** The real Docker engine and the offline sandbox image, or a loud failure naming them. */
export function requireDocker(): { docker: Docker; image: string } {
  const image = inject("sandboxImage");
  if (!image) throw new Error(inject("dockerError") || "Docker is not available");
  return { docker: new Docker(), image };
}

/** Removes every container carrying this label value (a test's own), running or not. */
export async function removeContainersLabelled(
  docker: Docker,
  label: string,
  value: string,
): Promise<void> {
  const found = await docker.listContainers({
    all: true,
    filters: { label: [`${label}=${value}`] },
  });
  await Promise.all(
    found.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => {}),
    ),
  );
}
