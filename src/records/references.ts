// Checks of the references a deal or task body makes (company, contact, deal, assignee): each must be of the
// request's workspace, else 400 on that field. Read through the tenant-scoped client, so another workspace's id is
// simply not found.
import type { TenantDb, TenantTx } from '../db/tenant-scope.js';
import { validationFailed } from '../lib/problem.js';

/** The references a body may name; undefined or null ones are not checked. */
export interface References {
  company_id?: string | null;
  contact_id?: string | null;
  deal_id?: string | null;
  assigned_to?: string | null;
}

const MESSAGES = {
  company_id: 'No such company in this organization.',
  contact_id: 'No such contact in this organization.',
  deal_id: 'No such deal in this organization.',
  assigned_to: 'Not a member of this organization.',
} as const;

/** Answers 400 naming every field whose reference is not of this workspace. */
export async function checkReferences(tx: TenantTx, refs: References): Promise<void> {
  const found = async (field: keyof References, exists: (id: string) => Promise<unknown>) => {
    const id = refs[field];
    return id === undefined || id === null || (await exists(id)) !== null ? [] : [field];
  };
  const missing = [
    ...(await found('company_id', (id) => tx.company.findFirst({ select: { id: true }, where: { id } }))),
    ...(await found('contact_id', (id) => tx.contact.findFirst({ select: { id: true }, where: { id } }))),
    ...(await found('deal_id', (id) => tx.deal.findFirst({ select: { id: true }, where: { id } }))),
    ...(await found('assigned_to', (userId) => tx.membership.findFirst({ select: { id: true }, where: { userId } }))),
  ];
  if (missing.length > 0) throw validationFailed(Object.fromEntries(missing.map((field) => [field, [MESSAGES[field]]])));
}

/**
 * Runs a write in one transaction of the tenant-scoped client. A referenced record deleted between its check and the
 * write (Prisma's foreign key violation P2003) answers 400, as a missing one does, never 500.
 */
export async function writeReferencing<T>(scope: { db: TenantDb }, work: (tx: TenantTx) => Promise<T>): Promise<T> {
  try {
    return await scope.db.$transaction(work);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'P2003') {
      throw validationFailed({ references: ['A record this one refers to was deleted meanwhile.'] });
    }
    throw error;
  }
}
