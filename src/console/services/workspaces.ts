// The console's workspaces: the list, one workspace's details (counts, never contents), and revoking its API keys.
import type pg from 'pg';
import type { Db } from '../../db/client.js';
import { bindOrganization } from '../../db/tenant.js';
import type { AuditContext } from '../../audit/audit-log.js';
import type { ApiKeyService } from '../../modules/api-keys/service.js';
import { offsetOf, offsetPage } from './offset-page.js';

export const WORKSPACE_STATUSES = ['active', 'pending_owner', 'cancelled'] as const;

/** The workspace columns the list and the detail page both show. */
const WORKSPACE_COLUMNS = {
  id: true,
  name: true,
  slug: true,
  status: true,
  isPersonal: true,
  createdAt: true,
  ownerEmail: true,
} as const;

/** The groups of companies the console lists for one workspace: at most this many. */
const SHARED_GROUPS_SHOWN = 50;

export function createConsoleWorkspaceService(deps: { db: Db; pool: pg.Pool; apiKeys: ApiKeyService }) {
  const { db, pool, apiKeys } = deps;

  /**
   * The companies of a workspace that already shared a tax id or an email when duplicates began to be refused (the
   * migration crm_profiles_archive_activity flagged them): per shared field, each group's customer codes, oldest first.
   * The shared value itself is the workspace's data and is not shown.
   */
  const sharedCompanyIdentities = (organizationId: string) =>
    db.$queryRaw<Array<{ field: 'tax_id' | 'email'; codes: Array<string | null>; companies: number }>>`
      SELECT field, array_agg(customer_code ORDER BY created_at, id) AS codes, count(*)::int AS companies
      FROM (
        SELECT 'tax_id' AS field, lower(tax_id) AS value, customer_code, created_at, id, tax_id_shared AS shared
        FROM companies WHERE organization_id = ${organizationId}::uuid AND tax_id IS NOT NULL
        UNION ALL
        SELECT 'email', lower(email), customer_code, created_at, id, email_shared
        FROM companies WHERE organization_id = ${organizationId}::uuid AND email IS NOT NULL
      ) AS identities
      GROUP BY field, value HAVING bool_or(shared)
      ORDER BY field, min(created_at) LIMIT ${SHARED_GROUPS_SHOWN}`;

  return {
    async list(filter: { search: string; status: string; page: number }) {
      const rows = await db.organization.findMany({
        where: {
          ...(filter.search
            ? {
                OR: [
                  { name: { contains: filter.search, mode: 'insensitive' as const } },
                  { slug: { contains: filter.search, mode: 'insensitive' as const } },
                ],
              }
            : {}),
          ...((WORKSPACE_STATUSES as readonly string[]).includes(filter.status)
            ? { status: filter.status as (typeof WORKSPACE_STATUSES)[number] }
            : {}),
        },
        orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
        ...offsetOf(filter.page),
        select: {
          ...WORKSPACE_COLUMNS,
          memberships: { where: { role: 'owner' }, select: { user: { select: { username: true } } } },
          _count: { select: { memberships: true } },
        },
      });
      return offsetPage(rows);
    },

    /**
     * A workspace with its members, the counts (never the contents) of its CRM records, its latest imports, the
     * companies that shared an identity and its API keys; null when there is none.
     */
    async detail(id: string) {
      const workspace = await db.organization.findUnique({
        where: { id },
        select: {
          ...WORKSPACE_COLUMNS,
          createdBy: { select: { username: true } },
          requireTwoFactor: true,
          memberships: {
            select: { role: true, user: { select: { id: true, username: true, twoFactorEnabledAt: true } } },
            orderBy: { createdAt: 'asc' },
          },
          _count: { select: { companies: true, contacts: true, deals: true, tasks: true, automations: true, runs: true } },
          // The latest imports' progress; never their file.
          imports: {
            select: {
              id: true,
              kind: true,
              status: true,
              totalRows: true,
              processedRows: true,
              created: true,
              updated: true,
              failedRows: true,
              createdAt: true,
            },
            orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
            take: 20,
          },
        },
      });
      if (!workspace) return null;
      const shared = await sharedCompanyIdentities(workspace.id);
      const keys = await apiKeys.listForConsole(db, workspace.id);
      return { ...workspace, shared, keys };
    },

    /**
     * Revokes through the API's own service (audited with the staff user), acting with an owner's reach over the
     * workspace; false when there is no such workspace.
     */
    async revokeApiKey(organizationId: string, keyId: string, audit: AuditContext): Promise<boolean> {
      const organization = await db.organization.findUnique({ where: { id: organizationId } });
      if (!organization) return false;
      await apiKeys.revoke(bindOrganization(db, pool, organization, 'owner'), keyId, audit);
      return true;
    },
  };
}

export type ConsoleWorkspaceService = ReturnType<typeof createConsoleWorkspaceService>;
