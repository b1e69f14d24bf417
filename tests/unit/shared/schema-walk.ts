import { z } from "zod";

/**
 * Every object field reachable from `schema`, with its dotted path, and whether the
 * field (or a wrapper around it: optional, nullable, default, pipe) carries a description.
 */
export function describedFields(schema: z.core.$ZodType): { path: string; described: boolean }[] {
  const found: { path: string; described: boolean }[] = [];
  walk(schema, "", found, new Set());
  return found;
}

function walk(
  schema: z.core.$ZodType,
  path: string,
  found: { path: string; described: boolean }[],
  seen: Set<z.core.$ZodType>,
): void {
  if (seen.has(schema)) return;
  seen.add(schema);
  const inner = unwrap(schema);
  if (inner instanceof z.ZodObject) {
    for (const [key, field] of Object.entries(inner.shape)) {
      const fieldPath = path === "" ? key : `${path}.${key}`;
      found.push({ path: fieldPath, described: hasDescription(field) });
      walk(field, fieldPath, found, seen);
    }
  } else if (inner instanceof z.ZodArray) {
    walk(inner.element, `${path}[]`, found, seen);
  } else if (inner instanceof z.ZodUnion) {
    for (const option of inner.options) walk(option, path, found, seen);
  } else if (inner instanceof z.ZodRecord) {
    walk(inner.valueType, `${path}{}`, found, seen);
  }
}

function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  let current = schema;
  for (;;) {
    if (
      current instanceof z.ZodOptional ||
      current instanceof z.ZodNullable ||
      current instanceof z.ZodDefault
    ) {
      current = current.unwrap();
    } else if (current instanceof z.ZodPipe) {
      current = current.in;
    } else {
      return current;
    }
  }
}

function hasDescription(schema: z.core.$ZodType): boolean {
  let current: z.core.$ZodType = schema;
  for (;;) {
    if (z.globalRegistry.get(current)?.description !== undefined) return true;
    const next = unwrap1(current);
    if (next === undefined) return false;
    current = next;
  }
}

function unwrap1(schema: z.core.$ZodType): z.core.$ZodType | undefined {
  if (
    schema instanceof z.ZodOptional ||
    schema instanceof z.ZodNullable ||
    schema instanceof z.ZodDefault
  ) {
    return schema.unwrap();
  }
  if (schema instanceof z.ZodPipe) return schema.in;
  return undefined;
}
