// Runs the email outbox worker while the app is up: polls for due rows and stops cleanly on close.
import fp from 'fastify-plugin';
import { runPollLoop } from '../lib/poll-loop.js';
import { processOutboxBatch } from '../modules/email/outbox.js';

export default fp(
  async (app) => {
    runPollLoop(app, 'email outbox worker', app.config.outboxPollIntervalMs, () =>
      processOutboxBatch(app.db, app.config.emailEncryptionKey, app.log),
    );
  },
  { name: 'outbox', dependencies: ['db'] },
);
