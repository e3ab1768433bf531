// Both password-reset answers take the same path: the request is queued, the lookup and email happen in the worker.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { storedJobOf } from '../helpers/jobs.js';
import { holdLocks, track } from '../helpers/locks.js';
import { JOBS } from '../../src/jobs/queue.js';

// No job runner in this app: the requests stay queued, only the answers matter here.
const { app, databaseUrl } = await buildTestApp(t, {}, { backgroundWorkers: false });
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
  for (const request of await app.db.passwordResetRequest.findMany()) {
    const job = await storedJobOf(app.pg, JOBS.passwordReset, request.id);
    t.same(job?.payload, { id: request.id }, `the job of ${request.email} carries the request id, not the address`);
  }
});
