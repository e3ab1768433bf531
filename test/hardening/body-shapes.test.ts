// Bodies of any shape answer 4xx (or a normal answer), never 5xx: deep, wide, long, duplicate and prototype keys,
// huge numbers, lone surrogates; and nothing is written for them.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const { app, logs } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const companies = `/api/v1/organizations/${organizationId}/companies/`;
const send = (payload: string, url = companies, contentType = 'application/json') =>
  app.inject({ method: 'POST', url, headers: { ...admin.headers, 'content-type': contentType }, payload });

t.test('deep bodies answer 400, whatever the depth', async (t) => {
  for (const depth of [33, 1_000, 20_000, 100_000]) {
    for (const [open, close] of [
      ['[', ']'],
      ['{"a":', '}'],
    ] as const) {
      const res = await send(`{"name": ${open.repeat(depth)}1${close.repeat(depth)}}`);
      t.equal(res.statusCode, 400, `${open} × ${depth}`);
      t.equal(json(res).code, 'validation_failed');
      t.match(json(res).errors.body[0], /Nested more than 32 levels deep/);
    }
  }
  t.equal(await app.db.company.count(), 0);
  t.notOk(
    logs.some((line) => line.includes('RangeError')),
    'no stack overflow anywhere',
  );
});

t.test('wide, long, duplicate-key, prototype-key, huge-number and surrogate bodies answer 4xx or a normal answer', async (t) => {
  const wide = `{"name":"w",${Array.from({ length: 100_000 }, (_, i) => `"k${i}":1`).join(',')}}`;
  const long = `{"name":[${Array.from({ length: 100_000 }, () => '1').join(',')}]}`;
  const cases: Array<[string, string, number[]]> = [
    ['wide', wide, [400, 413]],
    ['long array', long, [400]],
    ['duplicate keys', '{"name":"a","name":"b"}', [201]],
    ['__proto__', '{"name":"p","__proto__":{"admin":true}}', [400]],
    ['constructor', '{"name":"c","constructor":{"prototype":{"x":1}}}', [400]],
    ['2^53 + 1', '{"name":"n","lifecycle_stage":9007199254740993}', [400]],
    ['1e400', '{"name":1e400}', [400]],
    ['lone surrogate', '{"name":"\\ud800"}', [400]],
    ['non-character', '{"name":"\\uffff\\ufffe"}', [201]],
    ['empty', '', [400]],
    ['truncated', '{"name": "abc', [400]],
  ];
  for (const [name, payload, statuses] of cases) {
    const res = await send(payload);
    t.ok(statuses.includes(res.statusCode), `${name}: ${res.statusCode}`);
    if (res.statusCode >= 400) {
      t.match(res.headers['content-type'], /application\/problem\+json/, `${name}: problem+json`);
      t.notMatch(res.body, /at [\w.]+ \(|SELECT|INSERT|node_modules/, `${name}: no stack or SQL`);
    }
  }
  const names = (await app.db.company.findMany({ select: { name: true } })).map((c) => c.name).sort();
  t.same(names, ['b', '\uffff\ufffe'], 'only the two valid bodies wrote');
});

t.test('API answers are never cached; the public documents are', async (t) => {
  const token = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/token/',
    payload: { username: 'admin', password: 'correct-horse-battery' },
  });
  const kinds = [
    ['token response', token],
    ['user read', await app.inject({ method: 'GET', url: '/api/v1/auth/me/', headers: admin.headers })],
    ['tenant read', await app.inject({ method: 'GET', url: companies, headers: admin.headers })],
    ['tenant write', await send('{"name":"Cached?"}')],
    ['401', await app.inject({ method: 'GET', url: '/api/v1/auth/me/' })],
    [
      '404 of a tenant record',
      await app.inject({ method: 'GET', url: `${companies}00000000-0000-4000-8000-000000000000/`, headers: admin.headers }),
    ],
    ['public read', await app.inject({ method: 'GET', url: '/api/v1/setup/' })],
  ] as const;
  for (const [kind, res] of kinds) {
    t.equal(res.headers['cache-control'], 'no-store', `${kind}: Cache-Control`);
    t.equal(res.headers.pragma, 'no-cache', `${kind}: Pragma`);
  }
  for (const url of ['/openapi.json', '/docs/json']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200);
    t.not(res.headers['cache-control'], 'no-store', `${url} stays cacheable`);
  }
});
