// The outbox worker runs by itself while the app is up: a committed email arrives without anyone calling it.
import t from 'tap';
import { enqueueEmail } from '../../src/email/outbox.js';
import { buildTestApp } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';

t.test('the worker delivers committed outbox rows through the installation fallback', async (t) => {
  const { app } = await buildTestApp(t);
  const mailbox = await startMailbox(t);
  await setupInstallation(app, mailbox);

  await app.db.$transaction((tx) =>
    enqueueEmail(
      tx,
      { to: 'someone@example.test', subject: 'Queued', text: 'Hello', html: '<p>Hello</p>' },
      {
        organizationId: null,
        requireAccount: true,
      },
    ),
  );
  const mail = await mailbox.waitForTo('someone@example.test', 5_000);
  t.equal(mail.subject, 'Queued');
  // The row is marked sent right after the server accepted the message.
  for (let i = 0; i < 50; i += 1) {
    if ((await app.db.emailOutbox.findFirstOrThrow()).status === 'sent') break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.match(await app.db.emailOutbox.findFirstOrThrow(), { status: 'sent', textBody: null, htmlBody: null });
});
