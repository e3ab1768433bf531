// The console's automation rules of one workspace: listed, changed and deleted through the API's own automation service.
import type pg from 'pg';
import type { Db } from '../../db/client.js';
import { bindOrganization } from '../../db/tenant.js';
import type { Tenant } from '../../db/tenant.js';
import type { AuditContext } from '../../audit/audit-log.js';
import type { ExpectedVersions } from '../../lib/etag.js';
import type { AutomationService } from '../../modules/automations/service.js';
import type { AutomationUpdate } from '../../modules/automations/schemas.js';

/** The most rules the console lists for one workspace (the API pages through more). */
const RULES_SHOWN = 100;

export function createConsoleAutomationService(deps: { db: Db; pool: pg.Pool; automations: AutomationService }) {
  const { db, pool, automations } = deps;

  /** The workspace with an owner's reach (the console acts as staff over it), or null when there is none. */
  async function ownerTenant(organizationId: string): Promise<{ name: string; tenant: Tenant } | null> {
    const organization = await db.organization.findUnique({ where: { id: organizationId } });
    return organization ? { name: organization.name, tenant: bindOrganization(db, pool, organization, 'owner') } : null;
  }

  return {
    /** The workspace's name and its rules, newest first; null when there is no such workspace. */
    async list(organizationId: string) {
      const workspace = await ownerTenant(organizationId);
      if (!workspace) return null;
      const page = await automations.list(workspace.tenant, { limit: RULES_SHOWN });
      return { id: organizationId, name: workspace.name, rules: page.items, more: page.next !== undefined };
    },
    /** One rule of the workspace (404 problem for another's or none), with the workspace's name; null without the workspace. */
    async get(organizationId: string, id: string) {
      const workspace = await ownerTenant(organizationId);
      if (!workspace) return null;
      return { id: organizationId, name: workspace.name, rule: await automations.get(workspace.tenant, id) };
    },
    /** Changes a rule as PATCH does (audited with the staff user); false when there is no such workspace. */
    async update(organizationId: string, id: string, input: AutomationUpdate, audit: AuditContext, expected: ExpectedVersions) {
      const workspace = await ownerTenant(organizationId);
      if (!workspace) return false;
      await automations.update(workspace.tenant, id, input, audit, expected);
      return true;
    },
    /** Deletes a rule as DELETE does (its runs stay); false when there is no such workspace. */
    async delete(organizationId: string, id: string, audit: AuditContext, expected: ExpectedVersions) {
      const workspace = await ownerTenant(organizationId);
      if (!workspace) return false;
      await automations.delete(workspace.tenant, id, audit, expected);
      return true;
    },
  };
}

export type ConsoleAutomationService = ReturnType<typeof createConsoleAutomationService>;
