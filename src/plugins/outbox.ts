// Runs the email jobs while the app is up: queued password-reset requests become emails, outbox rows are sent;
// graphile-worker wakes the runner on new jobs and retries failures, and the app's close drains it.
import fp from 'fastify-plugin';
import { keepJobRunner } from '../jobs/queue.js';
import { passwordResetTasks } from '../modules/account/password-service.js';
import { outboxTasks } from '../modules/email/outbox.js';

/** Emails sent at once by one process (each waits on an SMTP server for up to 10 s per phase). */
const CONCURRENCY = 3;

export default fp(
  async (app) => {
    keepJobRunner(app, {
      label: 'email',
      concurrency: CONCURRENCY,
      taskList: {
        ...passwordResetTasks({ db: app.db, appUrl: app.config.appUrl }),
        ...outboxTasks({
          db: app.db,
          encryptionKey: app.config.emailEncryptionKey,
          allowPrivateHosts: app.config.smtpAllowPrivate,
          log: app.log,
        }),
      },
    });
  },
  { name: 'outbox', dependencies: ['db'] },
);
