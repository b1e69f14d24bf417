import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { mode, RESOLVER_KINDS, setupWorkspace, WORKDIR, type WorkspaceEnv } from "./harness.ts";

describe.each(RESOLVER_KINDS)("modes and ownership (%s resolver)", (kind) => {
  let env: WorkspaceEnv;
  let umask: number;
  beforeEach(async () => {
    umask = process.umask(0o022);
    env = await setupWorkspace(kind);
  });
  afterEach(async () => {
    process.umask(umask);
    await env.cleanup();
  });

  for (const mask of [0o022, 0o077, 0o277]) {
    it(`new dirs are 0700 and new files 0600 under umask ${mask.toString(8).padStart(3, "0")}`, async () => {
      process.umask(mask);
      await env.fs.mkdir("m");
      await env.fs.mkdir("p/q", { parents: true });
      await env.fs.writeFile("m/f.txt", "x");
      await env.fs.writeBatch("b", [{ name: "g.txt", source: "y" }], { parents: true });
      await env.fs.copy("m", "m2", { recursive: true });
      await env.fs.copy("m/f.txt", "f2.txt");
      process.umask(0o022);
      for (const dir of ["m", "p", "p/q", "b", "m2"]) expect(mode(env.at(dir)), dir).toBe(0o700);
      for (const file of ["m/f.txt", "b/g.txt", "m2/f.txt", "f2.txt"])
        expect(mode(env.at(file)), file).toBe(0o600);
      expect(mode(env.workspace)).toBe(0o700);
      expect(mode(join(env.workspace, "projects"))).toBe(0o700);
      expect(mode(env.workdir)).toBe(0o700);
    });
  }

  it("with an owner, the workspace and what the layer creates belong to the sandbox user", async () => {
    const sys = createLibcSyscalls();
    const users = createUserWorkspaces({
      dataRoot: env.dataRoot,
      sys,
      resolver: createPathResolver(sys, { kind }),
      owner: { uid: 1000, gid: 1000 },
    });
    const fs = await users.ensureManagedWorkdir("dave", WORKDIR);
    try {
      await fs.writeFile("uploads/a.txt", "x", { parents: true });
      const base = join(env.dataRoot, "users", "dave");
      for (const path of [
        "workspace",
        "workspace/projects",
        `workspace/${WORKDIR}`,
        `workspace/${WORKDIR}/uploads`,
        `workspace/${WORKDIR}/uploads/a.txt`,
      ]) {
        expect(statSync(join(base, path)).uid, path).toBe(1000);
        expect(statSync(join(base, path)).gid, path).toBe(1000);
      }
      expect(statSync(base).uid).toBe(process.getuid?.());
      expect(statSync(join(env.dataRoot, "users")).uid).toBe(process.getuid?.());
    } finally {
      fs.close();
    }
  });
});
