// Runs the automation worker while the app is up: executes queued runs (see run-queue.ts) and stops cleanly on close.
import fp from 'fastify-plugin';
import { runPollLoop } from '../lib/poll-loop.js';
import { processRunBatch } from '../modules/automations/run-queue.js';

export default fp(
  async (app) => {
    const deps = {
      db: app.db,
      encryptionKey: app.config.emailEncryptionKey,
      allowPrivateTargets: app.config.webhookAllowPrivate,
      automationEmailsPerHour: app.config.automationEmailsPerHour,
      smtpAllowPrivate: app.config.smtpAllowPrivate,
      log: app.log,
    };
    runPollLoop(app, 'automation worker', app.config.outboxPollIntervalMs, () => processRunBatch(app.db, deps));
  },
  { name: 'automation-worker', dependencies: ['db'] },
);
