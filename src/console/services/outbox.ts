// The console's email outbox: rows without their bodies, and putting a failed email back in the queue.
import type { Db } from '../../db/client.js';
import { enqueueJob, JOBS, jobKey } from '../../jobs/queue.js';
import { recordAudit, type AuditContext } from '../../audit/audit-log.js';
import { offsetOf, offsetPage } from './offset-page.js';

export const OUTBOX_STATUSES = ['pending', 'sent', 'failed'] as const;

export function createConsoleOutboxService(deps: { db: Db }) {
  const { db } = deps;
  return {
    /**
     * Outbox rows without their bodies (a message's links are credentials), each pending one with the time its job is
     * due (graphile-worker's `jobs` view, looked up by job key; null while an attempt is in progress or without a job).
     */
    async list(status: string, page: number) {
      const found = await db.emailOutbox.findMany({
        where: (OUTBOX_STATUSES as readonly string[]).includes(status) ? { status: status as (typeof OUTBOX_STATUSES)[number] } : {},
        orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
        ...offsetOf(page),
        select: {
          id: true,
          subject: true,
          toAddress: true,
          status: true,
          attempts: true,
          lastError: true,
          createdAt: true,
        },
      });
      const { rows, hasNext } = offsetPage(found);
      const keys = rows.filter((row) => row.status === 'pending').map((row) => jobKey(JOBS.email, row.id));
      const due =
        keys.length === 0
          ? []
          : await db.$queryRaw<Array<{ key: string; run_at: Date }>>`
              SELECT key, run_at FROM graphile_worker.jobs WHERE key = ANY(${keys}::text[]) AND locked_at IS NULL`;
      const dueAt = new Map(due.map((job) => [job.key, job.run_at]));
      return { rows: rows.map((row) => ({ ...row, nextAttemptAt: dueAt.get(jobKey(JOBS.email, row.id)) ?? null })), hasNext };
    },

    /**
     * Puts a failed email back in the queue with a new job (a fresh set of attempts); false when it is not (or no
     * longer) failed. Its bodies were wiped when it failed, so a message that carried a link arrives without it.
     */
    async retry(id: string, audit: AuditContext): Promise<boolean> {
      return db.$transaction(async (tx) => {
        const updated = await tx.emailOutbox.updateMany({ where: { id, status: 'failed' }, data: { status: 'pending', lastError: null } });
        if (updated.count === 0) return false;
        await enqueueJob(tx, JOBS.email, id);
        await recordAudit(tx, { ...audit, action: 'email.retried', target: { type: 'email', id } });
        return true;
      });
    },
  };
}

export type ConsoleOutboxService = ReturnType<typeof createConsoleOutboxService>;
