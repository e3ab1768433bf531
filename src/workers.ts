// The composition root of the background work: the tasks of each in-process job runner and the automation run
// dispatcher, built once from the config.
import type { FastifyInstance } from 'fastify';
import { sessionDatabaseUrl } from './config.js';
import { keepJobRunner } from './jobs/queue.js';
import { WorkerLiveness } from './jobs/liveness.js';
import { passwordResetTasks } from './modules/account/password-service.js';
import { outboxTasks } from './email/outbox.js';
import { createRunDispatcher } from './jobs/run-dispatcher.js';
import { executeRun } from './modules/automations/run-queue.js';
import { importTasks } from './modules/imports/import-job.js';
import { CUSTOM_FIELD_INDEX_CRON_ITEMS, customFieldIndexTasks } from './modules/custom-fields/index-job.js';
import { EVENT_CRON_ITEMS, eventTasks } from './modules/events/retention.js';
import { threadConnection } from './modules/imports/import-thread.js';

/** How long the email and import runners ignore each other's wake-ups after finding nothing (see `quietMs`). */
const QUIET_MS = 100;

/**
 * Keeps the background work going while the app is up: two job runners, emails (password-reset requests become emails,
 * outbox rows are sent) and CSV imports, and the automation run dispatcher, apart so that slow webhooks never hold mail
 * back. The app's close drains them. The jobs of workers whose process died are released after JOB_RECOVERY_SECONDS (see
 * jobs/liveness.ts); a run's lease lasts as long (jobs/automation-runs.ts).
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
    // The change feed's hourly cleanup, a short statement beside the mail.
    cronItems: EVENT_CRON_ITEMS,
    taskList: {
      ...eventTasks({ db }),
      ...passwordResetTasks({ db, appUrl: config.appUrl }),
      ...outboxTasks({ db, encryptionKey: config.emailEncryptionKey, allowPrivateHosts: config.smtpAllowPrivate, log }),
    },
  });
  // Automation runs are claimed from automation_runs itself, as the owner (across workspaces), by one dispatcher per
  // process; each run then executes on its own organization only (run-queue.ts).
  const runDeps = {
    db,
    encryptionKey: config.emailEncryptionKey,
    allowPrivateTargets: config.webhookAllowPrivate,
    automationEmailsPerHour: config.automationEmailsPerHour,
    smtpAllowPrivate: config.smtpAllowPrivate,
    log,
  };
  const runs = createRunDispatcher({
    connectionString: sessionDatabaseUrl(config) ?? '',
    concurrency: config.workerConcurrency.automation,
    leaseSeconds: config.jobRecoverySeconds,
    pollIntervalMs: config.outboxPollIntervalMs,
    log,
    execute: (run) => executeRun(runDeps, run),
  });
  app.addHook('onReady', async () => runs.start());
  app.addHook('preClose', async () => runs.close());
  // Imports on a runner of their own, one at a time per process: a long file never holds emails or automations back.
  // Custom fields' index builds go there too: long, rare, and never urgent (a range reads without its index meanwhile);
  // so does their sweep, which queues the builds of fields whose workspace grew past the size that needs them.
  keepJobRunner(app, {
    label: 'import',
    liveness,
    concurrency: 1,
    quietMs: QUIET_MS,
    cronItems: CUSTOM_FIELD_INDEX_CRON_ITEMS,
    taskList: { ...importTasks({ db, pool: app.pg, connection: threadConnection(config) }), ...customFieldIndexTasks({ pool: app.pg }) },
  });
}
