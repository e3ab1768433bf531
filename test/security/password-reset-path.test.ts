// Both password-reset answers take the same path: the request is queued, the lookup and email happen in the worker.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { holdLocks, track } from '../helpers/locks.js';

// The worker stays idle during this test (its first poll runs at start, the next one in an hour): only the answers matter here.
const { app, databaseUrl } = await buildTestApp(t, { OUTBOX_POLL_INTERVAL_MS: '3600000' });
const known = await createUser(app, { email: 'known@example.test' });

t.test('a known address is answered without touching its account, like an unknown one', async (t) => {
  // A lock on the account's row stops any request that would look the account up and create a link for it.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [known.id]);
  const answers = [];
  for (const email of ['known@example.test', 'unknown@example.test']) {
    const request = track(app.inject({ method: 'POST', url: '/api/v1/auth/password-reset/', payload: { email } }));
    await holder.waitForLockWaiters(1, request.settled);
    t.ok(request.settled(), `the answer for ${email} did not wait for the account`);
    if (!request.settled()) await holder.release();
    answers.push(await request.promise);
  }
  await holder.release();
  t.same(
    answers.map((res) => res.statusCode),
    [200, 200],
  );
  t.same(json(answers[0]!), json(answers[1]!), 'identical bodies');
  t.equal(await app.db.passwordResetToken.count(), 0, 'no link was created while answering');
  t.same(
    (await app.db.passwordResetRequest.findMany({ orderBy: { createdAt: 'asc' } })).map((r) => r.email),
    ['known@example.test', 'unknown@example.test'],
    'both requests are queued alike',
  );
});
