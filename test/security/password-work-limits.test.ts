// Password hashing cannot be farmed: per-IP sign-in cap, per-user limit on password checks, bounded hashing queue.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';

t.test('sign-in attempts are capped per client IP whatever the username', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_TOKEN_PER_IP_PER_MINUTE: '3', RATE_LIMIT_TOKEN_PER_MINUTE: '100' });
  const attempt = (username: string, remoteAddress: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/token/', remoteAddress, payload: { username, password: 'guess-guess-guess' } });
  for (const name of ['ann', 'bob', 'cid']) t.equal((await attempt(name, '10.9.0.1')).statusCode, 401, `attempt for ${name}`);
  const limited = await attempt('dan', '10.9.0.1');
  t.equal(limited.statusCode, 429, 'a fourth username from the same address is refused');
  t.equal(json(limited).code, 'rate_limited');
  t.ok(limited.headers['retry-after'], 'Retry-After');
  t.equal((await attempt('dan', '10.9.0.2')).statusCode, 401, 'another address is not affected');
});

t.test('the per-IP cap and the per IP and username limit both apply to each attempt', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_TOKEN_PER_IP_PER_MINUTE: '4', RATE_LIMIT_TOKEN_PER_MINUTE: '2' });
  const attempt = (username: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/auth/token/',
      remoteAddress: '10.9.1.1',
      payload: { username, password: 'guess-guess-guess' },
    });
  t.same([(await attempt('eve')).statusCode, (await attempt('eve')).statusCode], [401, 401]);
  t.equal((await attempt('eve')).statusCode, 429, 'the third attempt for one username is refused');
  t.equal((await attempt('fay')).statusCode, 401, 'another username is still checked');
  t.equal((await attempt('gus')).statusCode, 429, 'the per-IP cap counts every attempt');
});

t.test('password change and account deletion share a per-user limit', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PASSWORD_CHECKS_PER_HOUR: '3' });
  const victim = await createUser(app);
  const other = await createUser(app);
  const change = (user: typeof victim, remoteAddress: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/auth/me/password/',
      remoteAddress,
      headers: user.headers,
      payload: { current_password: 'a-wrong-guess', new_password: 'a-fine-new-password' },
    });
  const remove = (remoteAddress: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/auth/me/delete/',
      remoteAddress,
      headers: victim.headers,
      payload: { password: 'another-wrong-guess', confirmation: 'DELETE' },
    });
  t.equal((await change(victim, '10.8.0.1')).statusCode, 400, 'first wrong guess');
  t.equal((await remove('10.8.0.2')).statusCode, 400, 'second wrong guess, through deletion');
  t.equal((await change(victim, '10.8.0.3')).statusCode, 400, 'third wrong guess');
  const limited = await change(victim, '10.8.0.4');
  t.equal(limited.statusCode, 429, 'the fourth guess is refused, from whichever address');
  t.equal(json(limited).code, 'rate_limited');
  t.equal((await remove('10.8.0.5')).statusCode, 429, 'deletion shares the limit');
  t.equal((await change(other, '10.8.0.4')).statusCode, 400, 'another user is not affected');
});

t.test('password hashing beyond the queue answers 503 instead of piling up', async (t) => {
  const { app } = await buildTestApp(t, { PASSWORD_HASH_CONCURRENCY: '1', PASSWORD_HASH_QUEUE: '1' });
  const user = await createUser(app, { password: 'the-real-password' });
  const attempts = await Promise.all(
    Array.from({ length: 12 }, (_v, i) =>
      app.inject({
        method: 'POST',
        url: '/api/v1/auth/token/',
        remoteAddress: `10.7.0.${i + 1}`,
        payload: { username: user.username, password: `wrong-password-${i}` },
      }),
    ),
  );
  const busy = attempts.filter((res) => res.statusCode === 503);
  t.ok(busy.length > 0, `some attempts found the queue full (${busy.length} of 12)`);
  t.ok(busy.length <= 10, 'one hash ran and one waited');
  for (const res of busy) {
    t.equal(json(res).code, 'server_busy');
    t.equal(res.headers['retry-after'], '1');
  }
  t.ok(
    attempts.every((res) => res.statusCode === 503 || res.statusCode === 401),
    'the others were checked normally',
  );
  const after = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/token/',
    remoteAddress: '10.7.1.1',
    payload: { username: user.username, password: 'the-real-password' },
  });
  t.equal(after.statusCode, 200, 'the queue drains: a later sign-in works');
});
