// Runs the email outbox worker while the app is up: turns queued password-reset requests into emails, sends due rows,
// and stops cleanly on close.
import fp from 'fastify-plugin';
import { runPollLoop } from '../lib/poll-loop.js';
import { processOutboxBatch } from '../modules/email/outbox.js';
import { processPasswordResetRequests } from '../modules/account/password-service.js';

export default fp(
  async (app) => {
    runPollLoop(
      app,
      'email outbox worker',
      app.config.outboxPollIntervalMs,
      async () =>
        (await processPasswordResetRequests(app.db, app.config.appUrl)) +
        (await processOutboxBatch(app.db, app.config.emailEncryptionKey, app.log, app.config.smtpAllowPrivate)),
    );
  },
  { name: 'outbox', dependencies: ['db'] },
);
