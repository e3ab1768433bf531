// Serialises the writes that must see one consistent picture of an organization (its owner, its default email
// account, its handoff state) by locking the organization row for the rest of the transaction.
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
