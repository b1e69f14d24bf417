/** Linux NAME_MAX: the longest single path component, in bytes. */
export const MAX_PATH_COMPONENT_BYTES = 255;

/** Linux PATH_MAX: the longest Workdir path, in UTF-8 bytes. */
export const MAX_WORKDIR_PATH_BYTES = 4096;

/** First component of every managed Workdir (`projects/<uuid>`). */
export const MANAGED_WORKDIR_ROOT = "projects";
