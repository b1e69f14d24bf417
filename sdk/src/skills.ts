import type { components } from "./generated/api.ts";
import type { CallOptions, Transport } from "./transport.ts";

export type SkillData = components["schemas"]["Skill"];
export type CatalogueSkill = components["schemas"]["CatalogueSkill"];
export type ImportedSkill = components["schemas"]["AdminSkill"];
export type SkillGrant = components["schemas"]["SkillGrant"];

/** The caller's visible skills: granted builtin and shared ones, and personal ones. */
export class Skills {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  async list(options: CallOptions = {}): Promise<SkillData[]> {
    return (await this.#transport.call((api, init) => api.GET("/v1/skills", init), options)).items;
  }
}

/** Admin only (ForbiddenError otherwise): the catalogue and its grants. */
export class AdminSkills {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Every builtin and shared skill, with content versions and grant counts. */
  async list(options: CallOptions = {}): Promise<CatalogueSkill[]> {
    return (await this.#transport.call((api, init) => api.GET("/v1/admin/skills", init), options))
      .items;
  }

  /** Grants `slug` to `uid` (idempotent); the user's sandboxes see it at /home/gem/skills. */
  grant(slug: string, uid: string, options: CallOptions = {}): Promise<SkillGrant> {
    return this.#transport.call(
      (api, init) =>
        api.PUT("/v1/admin/skills/{slug}/grants/{uid}", {
          ...init,
          params: { path: { slug, uid } },
        }),
      options,
    );
  }

  /** Revokes a grant (idempotent); resolves once the skill is gone from the user's sandboxes. */
  async revoke(slug: string, uid: string, options: CallOptions = {}): Promise<void> {
    await this.#transport.call(
      (api, init) =>
        api.DELETE("/v1/admin/skills/{slug}/grants/{uid}", {
          ...init,
          params: { path: { slug, uid } },
        }),
      options,
    );
  }

  /** Registers or updates a shared skill from a zip or tar.gz archive (upload, then import). */
  async import(
    slug: string,
    archive: Uint8Array | Blob,
    options: CallOptions = {},
  ): Promise<ImportedSkill> {
    const blob = archive instanceof Blob ? archive : new Blob([new Uint8Array(archive)]);
    const upload = await this.#transport.call(
      (api, init) => api.POST("/v1/admin/skills/uploads", { ...init, body: { size: blob.size } }),
      options,
    );
    await this.#transport.fetch(upload.upload_url, {
      method: upload.method,
      headers: upload.headers,
      body: blob,
      auth: false,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return this.#transport.call(
      (api, init) =>
        api.POST("/v1/admin/skills", { ...init, body: { slug, upload_id: upload.upload_id } }),
      options,
    );
  }
}
