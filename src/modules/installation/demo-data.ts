// The demo workspace of `make demo`: a fixed user, workspace, CRM records, deals and tasks, created once (a second run adds nothing).
import type pg from 'pg';
import type { Db } from '../../db/client.js';
import { bindOrganization } from '../../db/tenant.js';
import { hashPassword } from '../../lib/passwords.js';
import { companyService } from '../companies/service.js';
import { contactService } from '../contacts/service.js';
import type { CrmScope } from '../../records/record-service.js';
import { dealService } from '../deals/service.js';
import { taskService } from '../tasks/service.js';

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

/** Deals of the demo pipeline: company (by index in COMPANIES), title, stage, value, and a lost reason where lost. */
const DEALS = [
  [0, 'Initech support renewal', 'negotiation', '12000.00'],
  [1, 'Globex pilot', 'qualified', '4500.00'],
  [2, 'Umbrella lab licences', 'lead', '30000.00'],
  [3, 'Stark Industries rollout', 'won', '82000.00'],
  [4, 'Wayne Enterprises security audit', 'proposal', '15500.00'],
  [5, 'Acme Rockets onboarding', 'lead', '2500.00'],
  [8, 'Tyrell Corporation expansion', 'proposal', '41000.00'],
  [9, 'Zürich Versicherungen integration', 'lost', '9900.00', 'Chose a local vendor'],
  [11, 'Vandelay Industries import module', 'won', '7300.00'],
] as const;

/** Tasks: company index, title, kind, priority, status, due (days after DEMO_START). */
const TASKS = [
  [0, 'Send the renewal quote', 'email', 'high', 'todo', 3],
  [1, 'Pilot kick-off call', 'call', 'normal', 'in_progress', 1],
  [2, 'Qualify the licence count', 'call', 'normal', 'todo', 5],
  [3, 'Rollout retrospective', 'meeting', 'low', 'completed', -2],
  [4, 'Audit proposal review', 'meeting', 'urgent', 'waiting', 2],
  [8, 'Expansion pricing', 'task', 'high', 'todo', 7],
  [9, 'Ask for feedback on the lost deal', 'email', 'low', 'todo', 10],
  [11, 'Invoice the import module', 'task', 'normal', 'completed', -1],
] as const;

/** When the demo's history starts: records are dated from here, a minute apart, so lists are stable and readable. */
const DEMO_START = Date.UTC(2026, 0, 5, 9, 0, 0);
const minute = (n: number) => new Date(DEMO_START + n * 60_000);

export interface DemoResult {
  created: { user: boolean; workspace: boolean; companies: number; contacts: number; deals: number; tasks: number };
  organizationId: string;
}

/**
 * Creates what is missing of the demo scenery; every part is looked up first, so a second run creates nothing. The
 * user and the workspace are installation rows; the CRM records go through the API's own services (customer codes,
 * owners, timelines, stage order), acting as the demo user, and are then dated a minute apart.
 */
export async function seedDemo(db: Db, pool: pg.Pool): Promise<DemoResult> {
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
  const existingWorkspace = await db.organization.findUnique({ where: { slug: DEMO.workspaceSlug } });
  const workspace =
    existingWorkspace ??
    (await db.organization.create({
      data: {
        name: DEMO.workspaceName,
        slug: DEMO.workspaceSlug,
        createdById: user.id,
        memberships: { create: { userId: user.id, role: 'owner' } },
      },
    }));
  const tenant = bindOrganization(db, pool, workspace, 'owner');
  const scope: CrmScope = {
    db: tenant.db,
    organizationId: workspace.id,
    writes: tenant.writes,
    actor: { type: 'user', id: user.id, name: DEMO.username },
  };
  const created = { user: existingUser === null, workspace: existingWorkspace === null, companies: 0, contacts: 0, deals: 0, tasks: 0 };
  if ((await tenant.db.company.count()) === 0) {
    for (const [i, [name, stage, domain]] of COMPANIES.entries()) {
      const company = await companyService.create(scope, {
        name,
        lifecycle_stage: stage,
        website: `https://${domain}`,
        email: `hello@${domain}`,
        phone_number: `+1 555 01${String(i).padStart(2, '0')}`,
        ...(stage === 'customer' ? { assigned_to: user.id } : {}),
      });
      await tenant.db.company.update({ where: { id: company.id }, data: { createdAt: minute(i) } });
      created.companies += 1;
    }
  }
  // Oldest first, as created.
  const companies = await tenant.db.company.findMany({ orderBy: { createdAt: 'asc' }, select: { id: true, website: true } });
  if ((await tenant.db.contact.count()) === 0) {
    for (const [i, company] of companies.entries()) {
      for (const k of [0, 1]) {
        const [first_name, last_name, job_title] = PEOPLE[(i * 2 + k) % PEOPLE.length] ?? PEOPLE[0];
        const domain = (company.website ?? 'https://example.com').replace('https://', '');
        const contact = await contactService.create(scope, {
          company_id: company.id,
          first_name,
          last_name,
          job_title,
          email: `${first_name.toLowerCase()}.${last_name.toLowerCase()}@${domain}`,
        });
        await tenant.db.contact.update({ where: { id: contact.id }, data: { createdAt: minute(60 + i * 2 + k) } });
        created.contacts += 1;
      }
    }
  }
  if ((await tenant.db.deal.count()) === 0) {
    for (const [index, title, stage, value, lostReason] of DEALS) {
      const company = companies[index];
      if (!company) continue;
      await dealService.create(scope, {
        title,
        company_id: company.id,
        stage,
        value,
        currency: 'EUR',
        tax_rate: '19.00',
        probability: stage === 'won' ? 100 : stage === 'lost' ? 0 : 50,
        assigned_to: user.id,
        ...(lostReason ? { lost_reason: lostReason } : {}),
      });
      created.deals += 1;
    }
  }
  if ((await tenant.db.task.count()) === 0) {
    for (const [index, title, kind, priority, status, dueDays] of TASKS) {
      const company = companies[index];
      if (!company) continue;
      await taskService.create(scope, {
        title,
        company_id: company.id,
        kind,
        priority,
        workflow_status: status,
        due_at: new Date(Date.now() + dueDays * 86_400_000).toISOString(),
        assigned_to: user.id,
      });
      created.tasks += 1;
    }
  }
  return { created, organizationId: workspace.id };
}
