// Deleting an account while an ownership transfer to it commits never leaves an active workspace without an owner.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, deleteAccount, setupInstallation } from '../helpers/fixtures.js';
import { holdLocks, track } from '../helpers/locks.js';
import { linkIn, startMailbox, tokenOf } from '../helpers/mailbox.js';

const mailbox = await startMailbox(t);
const { app, databaseUrl } = await buildTestApp(t);
const { admin: owner, organizationId } = await setupInstallation(app, mailbox);

t.test('an ownership transfer accepted while the new owner deletes the account', async (t) => {
  const heir = await createUser(app, { membership: { organizationId, role: 'admin' } });
  const membership = await app.db.membership.findFirstOrThrow({ where: { organizationId, userId: heir.id } });
  // A key-share lock on the heir's row stops the deletion after its ownership check, as a slow transaction would.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE', [heir.id]);
  const deletion = track(deleteAccount(app, heir));
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
    (deleted === 204 && transferred === 404 && owners[0]?.userId === owner.id) ||
      (deleted === 409 && transferred === 200 && owners[0]?.userId === heir.id),
    'one of the two wins cleanly',
  );
});

t.test('an owner handoff accepted while the new owner deletes the account', async (t) => {
  const heir = await createUser(app, { email: 'heir-of-hooli@example.test' });
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/organizations/',
    headers: owner.headers,
    payload: { name: 'Hooli', owner_email: heir.email },
  });
  t.equal(created.statusCode, 201);
  const hooliId = json(created).id as string;
  const token = tokenOf(linkIn(await mailbox.waitForTo(heir.email), '/invite/'));
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM users WHERE id = $1 FOR KEY SHARE', [heir.id]);
  const deletion = track(deleteAccount(app, heir));
  await holder.waitForLockWaiters(1);
  const accept = track(app.inject({ method: 'POST', url: `/api/v1/invitations/${token}/accept/`, headers: heir.headers, payload: {} }));
  await holder.waitForLockWaiters(2, accept.settled);
  await holder.release();
  const [deleted, accepted] = [(await deletion.promise).statusCode, (await accept.promise).statusCode];
  const hooli = await app.db.organization.findUniqueOrThrow({ where: { id: hooliId }, include: { memberships: true } });
  const owners = hooli.memberships.filter((m) => m.role === 'owner');
  t.ok(
    hooli.status !== 'active' || owners.length === 1,
    `an active workspace has its owner (deletion ${deleted}, accept ${accepted}, ${hooli.status})`,
  );
  t.ok((deleted === 409 && accepted === 201) || (deleted === 204 && accepted !== 201), 'one of the two wins cleanly');
  t.ok(accepted < 500, 'no server error');
});

t.test('a handoff accepted by an account deleted while the acceptance waits answers 401, not 500', async (t) => {
  const heir = await createUser(app, { email: 'heir-of-initech@example.test' });
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/organizations/',
    headers: owner.headers,
    payload: { name: 'Initech', owner_email: heir.email },
  });
  const initechId = json(created).id as string;
  const token = tokenOf(linkIn(await mailbox.waitForTo(heir.email), '/invite/'));
  // The acceptance waits for the workspace row while the account is deleted.
  const holder = await holdLocks(t, databaseUrl);
  await holder.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [initechId]);
  const accept = track(app.inject({ method: 'POST', url: `/api/v1/invitations/${token}/accept/`, headers: heir.headers, payload: {} }));
  await holder.waitForLockWaiters(1, accept.settled);
  const deleted = await deleteAccount(app, heir);
  t.equal(deleted.statusCode, 204);
  await holder.release();
  t.equal((await accept.promise).statusCode, 401, 'the acceptance of a deleted account is refused');
  const initech = await app.db.organization.findUniqueOrThrow({ where: { id: initechId }, include: { memberships: true } });
  t.equal(initech.status, 'pending_owner', 'the workspace still waits for its owner');
});
