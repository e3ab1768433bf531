// The composition root of the background work: which tasks each in-process job runner takes, built once from the config.
import type { FastifyInstance } from 'fastify';
import { sessionDatabaseUrl } from './config.js';
import { keepJobRunner } from './jobs/queue.js';
import { WorkerLiveness } from './jobs/liveness.js';
import { passwordResetTasks } from './modules/account/password-service.js';
import { outboxTasks } from './email/outbox.js';
import { automationTasks } from './modules/automations/run-queue.js';
import { importTasks } from './modules/imports/import-job.js';
import { EVENT_CRON_ITEMS, eventTasks } from './modules/events/retention.js';
import { threadConnection } from './modules/imports/import-thread.js';

/** How long the email and import runners ignore the automation runs' wake-ups after finding nothing (see `quietMs`). */
const QUIET_MS = 100;

/**
 * Keeps three runners going while the app is up: emails (password-reset requests become emails, outbox rows are sent)
 * automation runs, apart so that slow webhooks never hold mail back, and CSV imports. The app's close drains them. The jobs of
 * workers whose process died are released after JOB_RECOVERY_SECONDS (see jobs/liveness.ts).
 */
export function startJobWorkers(app: FastifyInstance): void {
  const { config, db, log } = app;
  // Session-level advisory locks: PostgreSQL itself, never a transaction pooler.
  const liveness = new WorkerLiveness(sessionDatabaseUrl(config) ?? '', config.jobRecoverySeconds, log);
  app.addHook('onReady', async () => liveness.start());
  // After the runners' own preClose hooks have drained them.
  app.addHook('onClose', async () => liveness.close());
  keepJobRunner(app, {
    label: 'email',
    liveness,
    concurrency: config.workerConcurrency.email,
    quietMs: QUIET_MS,
    taskList: {
      ...passwordResetTasks({ db, appUrl: config.appUrl }),
      ...outboxTasks({ db, encryptionKey: config.emailEncryptionKey, allowPrivateHosts: config.smtpAllowPrivate, log }),
    },
  });
  keepJobRunner(app, {
    label: 'automation',
    liveness,
    concurrency: config.workerConcurrency.automation,
    // A burst of events is fetched a batch at a time (and its runs start and end in one statement each, run-queue.ts).
    batchSize: 2 * config.workerConcurrency.automation,
    // The change feed's hourly cleanup beside the runs that the same events feed.
    cronItems: EVENT_CRON_ITEMS,
    taskList: {
      ...eventTasks({ db }),
      ...automationTasks({
        db,
        encryptionKey: config.emailEncryptionKey,
        allowPrivateTargets: config.webhookAllowPrivate,
        automationEmailsPerHour: config.automationEmailsPerHour,
        smtpAllowPrivate: config.smtpAllowPrivate,
        log,
      }),
    },
  });
  // Imports on a runner of their own, one at a time per process: a long file never holds emails or automations back.
  keepJobRunner(app, {
    label: 'import',
    liveness,
    concurrency: 1,
    quietMs: QUIET_MS,
    taskList: importTasks({ db, pool: app.pg, connection: threadConnection(config) }),
  });
}
