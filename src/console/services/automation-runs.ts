// The console's automation runs across workspaces: the rule's name and the error, never the payload.
import type { Db } from '../../db/client.js';
import { PAGE_SIZE } from './offset-page.js';

export const RUN_STATUSES = ['queued', 'running', 'success', 'failed', 'skipped'] as const;

export function createConsoleRunService(deps: { db: Db }) {
  const { db } = deps;
  return {
    /** Runs across workspaces, failed ones first, then newest. */
    async list(status: string, page: number) {
      const filter = (RUN_STATUSES as readonly string[]).includes(status) ? status : '';
      const ids = await db.$queryRaw<{ id: string }[]>`
        SELECT id FROM automation_runs WHERE (${filter} = '' OR status::text = ${filter})
        ORDER BY (status = 'failed') DESC, created_at DESC, id LIMIT ${PAGE_SIZE + 1} OFFSET ${(page - 1) * PAGE_SIZE}`;
      const order = new Map(ids.map((row, i) => [row.id, i]));
      const rows = await db.automationRun.findMany({
        where: { id: { in: ids.slice(0, PAGE_SIZE).map((row) => row.id) } },
        select: {
          id: true,
          trigger: true,
          status: true,
          errorMessage: true,
          createdAt: true,
          finishedAt: true,
          automationId: true,
          organization: { select: { name: true } },
        },
      });
      // A run outlives its rule (no foreign key): a deleted rule's runs show no name.
      const rules = await db.automation.findMany({
        where: { id: { in: [...new Set(rows.map((row) => row.automationId))] } },
        select: { id: true, name: true },
      });
      const names = new Map(rules.map((rule) => [rule.id, rule.name]));
      const position = (id: string) => order.get(id) ?? 0;
      const named = rows.map((row) => ({ ...row, automation: { name: names.get(row.automationId) ?? null } }));
      return { rows: named.sort((a, b) => position(a.id) - position(b.id)), hasNext: ids.length > PAGE_SIZE };
    },
  };
}

export type ConsoleRunService = ReturnType<typeof createConsoleRunService>;
