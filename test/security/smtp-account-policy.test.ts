// Email accounts: the stored SMTP password never follows a change of server, and hosts obey the network policy.
import t from 'tap';
import { encryptSecret } from '../../src/lib/crypto.js';
import { TEST_EMAIL_KEY, buildTestApp, json } from '../helpers/app.js';
import { createUser, setupInstallation } from '../helpers/fixtures.js';
import { startMailbox } from '../helpers/mailbox.js';

const CREDENTIALS = { username: 'owner-smtp-user', password: 'owner-smtp-secret-Qw12' };

t.test('an admin cannot redirect the stored password to another server', async (t) => {
  const ownersServer = await startMailbox(t, CREDENTIALS);
  // Accepts exactly the owner's credentials: a message arriving here proves the password was sent to it.
  const attackersServer = await startMailbox(t, CREDENTIALS);
  const { app } = await buildTestApp(t);
  const { admin: owner, organizationId } = await setupInstallation(app);
  const admin = await createUser(app, { membership: { organizationId, role: 'admin' } });
  const url = `/api/v1/organizations/${organizationId}/email-accounts/`;
  const created = await app.inject({ method: 'POST', url, headers: owner.headers, payload: ownersServer.smtpConfig({ name: 'Owner' }) });
  t.equal(created.statusCode, 201);
  const accountId = json(created).id as string;
  const before = await app.db.emailAccount.findUniqueOrThrow({ where: { id: accountId } });

  for (const change of [
    { port: attackersServer.port },
    { host: 'localhost' },
    { username: 'someone-else' },
    { use_tls: true },
    { use_ssl: true, port: 465 },
  ]) {
    const res = await app.inject({ method: 'PATCH', url: `${url}${accountId}/`, headers: admin.headers, payload: change });
    t.equal(res.statusCode, 400, `refused without the password: ${JSON.stringify(change)}`);
    t.equal(json(res).code, 'password_required');
    t.ok(json(res).errors?.password, 'errors.password');
  }
  t.same(await app.db.emailAccount.findUniqueOrThrow({ where: { id: accountId } }), before, 'the account is unchanged');
  const sent = await app.inject({
    method: 'POST',
    url: `${url}${accountId}/test/`,
    headers: admin.headers,
    payload: { recipient: 'probe@example.test' },
  });
  t.equal(sent.statusCode, 200);
  t.equal((await ownersServer.waitForTo('probe@example.test')).authUser, CREDENTIALS.username, "the test send went to the owner's server");
  t.equal(attackersServer.messages.length, 0, 'nothing reached the other server');

  const renamed = await app.inject({
    method: 'PATCH',
    url: `${url}${accountId}/`,
    headers: admin.headers,
    payload: { name: 'Renamed', from_name: 'Sales' },
  });
  t.equal(renamed.statusCode, 200, 'other fields change without the password');
  const unchangedPort = await app.inject({
    method: 'PATCH',
    url: `${url}${accountId}/`,
    headers: admin.headers,
    payload: { port: ownersServer.port },
  });
  t.equal(unchangedPort.statusCode, 200, 'sending the current value is not a change');
  const withPassword = await app.inject({
    method: 'PATCH',
    url: `${url}${accountId}/`,
    headers: admin.headers,
    payload: { port: attackersServer.port, password: 'the-admins-own-Pw9' },
  });
  t.equal(withPassword.statusCode, 200, 'with a password of their own, the server may change');
});

t.test('workspace email accounts may not point at private or loopback hosts unless configured', async (t) => {
  const fallback = await startMailbox(t);
  const { app } = await buildTestApp(t, { EMAIL_SMTP_ALLOW_PRIVATE: 'false' });
  // The installation fallback is the operator's, entered with the setup token: it may be local.
  const { admin: owner, organizationId } = await setupInstallation(app, fallback);
  const url = `/api/v1/organizations/${organizationId}/email-accounts/`;
  for (const host of ['127.0.0.1', 'localhost', '10.1.2.3', '169.254.169.254', '[::1]', '192.168.0.10', 'mail.localhost']) {
    const res = await app.inject({ method: 'POST', url, headers: owner.headers, payload: fallback.smtpConfig({ host }) });
    t.equal(res.statusCode, 400, `create with ${host}`);
    t.ok(json(res).errors?.host, 'errors.host');
  }
  const created = await app.inject({
    method: 'POST',
    url,
    headers: owner.headers,
    payload: fallback.smtpConfig({ host: 'smtp.example.com' }),
  });
  t.equal(created.statusCode, 201, 'a public host name is accepted');
  const moved = await app.inject({
    method: 'PATCH',
    url: `${url}${json(created).id}/`,
    headers: owner.headers,
    payload: { host: '172.16.0.1', password: 'x-password-1' },
  });
  t.equal(moved.statusCode, 400, 'nor can an account be moved to a private host');
  t.ok(json(moved).errors?.host);

  // Checked again when sending (a name can resolve to an internal address; rows may predate the policy).
  const internal = await startMailbox(t, { username: 'internal-user', password: 'internal-secret-Pw3' });
  const stored = await app.db.emailAccount.create({
    data: {
      organizationId,
      name: 'Internal',
      host: internal.host,
      port: internal.port,
      username: internal.username,
      passwordEncrypted: encryptSecret(internal.password, Buffer.from(TEST_EMAIL_KEY, 'base64')),
      fromEmail: 'crm@example.test',
      useTls: false,
      isDefault: false,
    },
  });
  const probe = await app.inject({
    method: 'POST',
    url: `${url}${stored.id}/test/`,
    headers: owner.headers,
    payload: { recipient: 'probe@example.test' },
  });
  t.equal(probe.statusCode, 502, 'the test send is refused');
  t.equal(json(probe).code, 'smtp_failed');
  t.equal(internal.messages.length, 0, 'no connection carried a message to the internal server');
});
