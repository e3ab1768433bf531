// Tenant routes authenticate and resolve the organization in one step: 401 for bad or revoked tokens, then 404.
import t from 'tap';
import { bearer, buildTestApp } from '../helpers/app.js';
import { createUser, setupInstallation, signIn } from '../helpers/fixtures.js';

t.test('tenant routes: authentication first (401), then membership (404)', async (t) => {
  const { app } = await buildTestApp(t);
  const { admin, organizationId } = await setupInstallation(app);
  const outsider = await createUser(app);
  const companies = (orgId: string) => `/api/v1/organizations/${orgId}/companies/`;
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });

  t.equal((await get(companies(organizationId), admin.headers)).statusCode, 200, 'member with a valid token');
  t.equal((await get(companies(organizationId))).statusCode, 401, 'no token');
  t.equal((await get(companies(organizationId), bearer('not.a.jwt'))).statusCode, 401, 'garbage token');
  t.equal((await get(companies('not-a-uuid'))).statusCode, 401, 'malformed id without a token is still a 401');
  t.equal((await get(companies('not-a-uuid'), admin.headers)).statusCode, 404, 'malformed id with a token');
  t.equal((await get(companies(organizationId), outsider.headers)).statusCode, 404, 'non-member');

  const session = await signIn(app, admin.username, admin.password);
  const logout = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/logout/',
    headers: session.headers,
    payload: { refresh: session.refresh },
  });
  t.equal(logout.statusCode, 204);
  t.equal((await get(companies(organizationId), session.headers)).statusCode, 401, 'access token of a logged-out session');
  t.equal((await get(companies(organizationId), admin.headers)).statusCode, 200, 'other sessions are unaffected');

  const change = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/me/password/',
    headers: admin.headers,
    payload: { current_password: admin.password, new_password: 'a-brand-new-password' },
  });
  t.equal(change.statusCode, 200);
  t.equal((await get(companies(organizationId), admin.headers)).statusCode, 401, 'access token issued before a password change');
});
