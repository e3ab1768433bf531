// Serialises the writes that must see one consistent picture of an organization (its owner, its default email
// account, its handoff state) by locking the organization row, or one part of it (its custom fields of a record type)
// by a transaction-level advisory lock, for the rest of the transaction.
import type { OrganizationStatus } from '../generated/prisma/enums.js';

interface RawQueryClient {
  $queryRaw<T = unknown>(query: TemplateStringsArray, ...values: unknown[]): PromiseLike<T>;
}

/** `SELECT ... FOR UPDATE` on the organization; returns its status, or null when it no longer exists. */
export async function lockOrganization(tx: RawQueryClient, organizationId: string): Promise<OrganizationStatus | null> {
  const rows = await tx.$queryRaw<{ status: OrganizationStatus }[]>`
    SELECT status FROM organizations WHERE id = ${organizationId}::uuid FOR UPDATE`;
  return rows[0]?.status ?? null;
}

/** The advisory lock's name for the custom field definitions of one record type of a workspace (hashed to its key). */
export const customFieldsLockName = (organizationId: string, object: string) => `custom_field_definitions:${organizationId}:${object}`;

/**
 * Waits for, then holds until the transaction ends, the advisory lock of the workspace's custom fields of `object`:
 * two creates (or restores) at the limit count the active fields one after the other, never both below it. An
 * advisory lock blocks only others asking for it: no row, and no records table, is locked.
 */
export async function lockCustomFields(tx: RawQueryClient, organizationId: string, object: string): Promise<void> {
  await tx.$queryRaw`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${customFieldsLockName(organizationId, object)}, 0))`;
}
