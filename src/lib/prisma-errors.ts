// Recognises database constraint violations in Prisma errors, so services can answer 409 instead of 500.

interface AdapterConstraint {
  index?: string;
  fields?: string[];
}

/**
 * True when `error` is a unique violation (P2002) on `table.column`. Through the pg driver adapter Prisma reports
 * the violated index (`<table>_<column>_key`) or the key columns, not the model field, so both are checked.
 */
export function isUniqueViolation(error: unknown, table: string, column: string): boolean {
  const e = error as { code?: unknown; meta?: { driverAdapterError?: { cause?: { constraint?: AdapterConstraint } }; target?: unknown } };
  if (e?.code !== 'P2002') return false;
  const constraint = e.meta?.driverAdapterError?.cause?.constraint;
  if (constraint?.index === `${table}_${column}_key`) return true;
  if (constraint?.fields?.some((field) => field.replace(/"/g, '') === column)) return true;
  const target = e.meta?.target;
  return Array.isArray(target) ? target.includes(column) : target === `${table}_${column}_key`;
}
