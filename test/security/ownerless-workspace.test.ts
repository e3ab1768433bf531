// Deleting an account while an ownership transfer to it commits never leaves an active workspace without an owner.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { holdLocks, track } from '../helpers/locks.js';

const { app, databaseUrl } = await buildTestApp(t);
const { admin: owner, organizationId } = await setupInstallation(app);

t.test('an ownership transfer accepted while the new owner deletes the account', async (t) => {
  const heir = await createUser(app, { membership: { organizationId, role: 'admin' } });
  const membership = await app.db.membership.findFirstOrThrow({ where: { organizationId, userId: heir.id } });
  // A key-share lock on the heir's row stops the deletion after its ownership check, as a slow transaction would.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE', [heir.id]);
  const deletion = track(
    app.inject({ method: 'POST', url: '/api/v1/auth/me/delete/', headers: heir.headers, payload: { password: heir.password, confirmation: 'DELETE' } }),
  );
  await holder.waitForLockWaiters(1);
  const transfer = track(
    app.inject({
      method: 'PATCH',
      url: `/api/v1/organizations/${organizationId}/members/${membership.id}/`,
      headers: owner.headers,
      payload: { role: 'owner' },
    }),
  );
  await holder.waitForLockWaiters(2, transfer.settled);
  await holder.release();
  const [deleted, transferred] = [(await deletion.promise).statusCode, (await transfer.promise).statusCode];
  const owners = await app.db.membership.findMany({ where: { organizationId, role: 'owner' } });
  t.equal(owners.length, 1, `the workspace keeps exactly one owner (deletion ${deleted}, transfer ${transferred})`);
  t.ok(
    (deleted === 204 && transferred === 404 && owners[0]?.userId === owner.id) || (deleted === 409 && transferred === 200 && owners[0]?.userId === heir.id),
    'one of the two wins cleanly',
  );
});
