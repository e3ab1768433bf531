// Runs the automation run jobs while the app is up (see run-queue.ts); the app's close drains them.
import fp from 'fastify-plugin';
import { keepJobRunner } from '../jobs/queue.js';
import { automationTasks } from '../modules/automations/run-queue.js';

/** Runs executed at once by one process (a webhook may take its full 5 s). */
const CONCURRENCY = 10;

export default fp(
  async (app) => {
    keepJobRunner(app, {
      label: 'automation',
      concurrency: CONCURRENCY,
      taskList: automationTasks({
        db: app.db,
        encryptionKey: app.config.emailEncryptionKey,
        allowPrivateTargets: app.config.webhookAllowPrivate,
        automationEmailsPerHour: app.config.automationEmailsPerHour,
        smtpAllowPrivate: app.config.smtpAllowPrivate,
        log: app.log,
      }),
    });
  },
  { name: 'automation-worker', dependencies: ['db'] },
);
