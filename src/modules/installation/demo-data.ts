// The demo workspace of `make demo`: a fixed user, workspace and CRM records, created once (a second run adds nothing).
import type { Db } from '../../db/client.js';
import { scopeToOrganization } from '../../db/tenant-scope.js';
import { hashPassword } from '../../lib/passwords.js';

export const DEMO = {
  username: 'demo',
  email: 'demo@example.com',
  /** A development convenience, printed by `make demo`; the command refuses to run in production. */
  password: 'demo-password-1234',
  workspaceName: 'Demo workspace',
  workspaceSlug: 'demo',
} as const;

const COMPANIES = [
  ['Initech', 'customer', 'initech.example'],
  ['Globex', 'prospect', 'globex.example'],
  ['Umbrella Corporation', 'lead', 'umbrella.example'],
  ['Stark Industries', 'customer', 'stark.example'],
  ['Wayne Enterprises', 'prospect', 'wayne.example'],
  ['Acme Rockets', 'lead', 'acme-rockets.example'],
  ['Hooli', 'inactive', 'hooli.example'],
  ['Soylent', 'lead', 'soylent.example'],
  ['Tyrell Corporation', 'customer', 'tyrell.example'],
  ['Zürich Versicherungen', 'prospect', 'zuerich.example'],
  ['Cyberdyne Systems', 'lead', 'cyberdyne.example'],
  ['Vandelay Industries', 'customer', 'vandelay.example'],
] as const;

const PEOPLE = [
  ['Ada', 'Lovelace', 'CTO'],
  ['Grace', 'Hopper', 'Head of Engineering'],
  ['Alan', 'Turing', 'Research lead'],
  ['Katherine', 'Johnson', 'Finance director'],
  ['Edsger', 'Dijkstra', 'Architect'],
  ['Barbara', 'Liskov', 'VP Product'],
] as const;

export interface DemoResult {
  created: { user: boolean; workspace: boolean; companies: number; contacts: number };
  organizationId: string;
}

/**
 * Creates what is missing of the demo scenery; every part is looked up by its fixed name first, so a second run
 * creates nothing. The user and the workspace are installation rows; the CRM records go through the tenant scope.
 */
export async function seedDemo(db: Db): Promise<DemoResult> {
  const existingUser = await db.user.findUnique({ where: { username: DEMO.username }, select: { id: true } });
  const user =
    existingUser ??
    (await db.user.create({
      data: {
        username: DEMO.username,
        email: DEMO.email,
        passwordHash: await hashPassword(DEMO.password),
        profile: { create: { displayName: 'Demo User' } },
      },
      select: { id: true },
    }));
  const existingWorkspace = await db.organization.findUnique({ where: { slug: DEMO.workspaceSlug }, select: { id: true } });
  const workspace =
    existingWorkspace ??
    (await db.organization.create({
      data: {
        name: DEMO.workspaceName,
        slug: DEMO.workspaceSlug,
        createdById: user.id,
        memberships: { create: { userId: user.id, role: 'owner' } },
      },
      select: { id: true },
    }));
  const tenant = scopeToOrganization(db, workspace.id);
  let companies = 0;
  let contacts = 0;
  if ((await tenant.company.count()) === 0) {
    // Oldest first, a minute apart, so the list (newest first) is stable and readable.
    const start = Date.UTC(2026, 0, 5, 9, 0, 0);
    const rows = COMPANIES.map(([name, stage, domain], i) => ({
      name,
      lifecycleStage: stage,
      website: `https://${domain}`,
      email: `hello@${domain}`,
      phoneNumber: `+1 555 01${String(i).padStart(2, '0')}`,
      createdAt: new Date(start + i * 60_000),
      organizationId: workspace.id,
    }));
    companies = (await tenant.company.createMany({ data: rows })).count;
  }
  if ((await tenant.contact.count()) === 0) {
    const all = await tenant.company.findMany({ orderBy: { createdAt: 'asc' }, select: { id: true, website: true } });
    const rows = all.flatMap((company, i) =>
      [0, 1].map((k) => {
        const [firstName, lastName, jobTitle] = PEOPLE[(i * 2 + k) % PEOPLE.length] ?? PEOPLE[0];
        const domain = (company.website ?? 'https://example.com').replace('https://', '');
        return {
          companyId: company.id,
          firstName,
          lastName,
          jobTitle,
          email: `${firstName.toLowerCase()}.${lastName.toLowerCase()}@${domain}`,
          organizationId: workspace.id,
        };
      }),
    );
    contacts = (await tenant.contact.createMany({ data: rows })).count;
  }
  return {
    created: { user: existingUser === null, workspace: existingWorkspace === null, companies, contacts },
    organizationId: workspace.id,
  };
}
