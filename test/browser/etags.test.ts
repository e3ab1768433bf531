// Safe concurrent edits: single records answer an ETag, If-None-Match answers 304, and PATCH/DELETE with If-Match
// answer 412 when the record changed since (two tabs editing one contact no longer overwrite each other silently).
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { setupInstallation } from '../helpers/fixtures.js';

const { app } = await buildTestApp(t);
const { admin, organizationId } = await setupInstallation(app);
const base = `/api/v1/organizations/${organizationId}`;
const company = json(
  await app.inject({ method: 'POST', url: `${base}/companies/`, headers: admin.headers, payload: { name: 'Tabs Inc' } }),
);
const contact = json(
  await app.inject({
    method: 'POST',
    url: `${base}/contacts/`,
    headers: admin.headers,
    payload: { company_id: company.id, first_name: 'Ada', last_name: 'Tab' },
  }),
);

for (const [kind, id] of [
  ['companies', company.id],
  ['contacts', contact.id],
] as const) {
  const url = `${base}/${kind}/${id}/`;
  const field = kind === 'companies' ? 'name' : 'first_name';

  t.test(`${kind}: ETag, 304, and 412 for the second of two tabs`, async (t) => {
    const first = await app.inject({ method: 'GET', url, headers: admin.headers });
    const etag = first.headers.etag as string;
    t.match(etag, /^"[0-9a-z]+"$/, 'a strong ETag');
    const cached = await app.inject({ method: 'GET', url, headers: { ...admin.headers, 'if-none-match': etag } });
    t.equal(cached.statusCode, 304);
    t.equal(cached.body, '');
    t.equal(cached.headers.etag, etag);
    t.equal((await app.inject({ method: 'GET', url, headers: { ...admin.headers, 'if-none-match': '"other"' } })).statusCode, 200);

    // Tab one saves; tab two, still holding the first version, is refused.
    const one = await app.inject({
      method: 'PATCH',
      url,
      headers: { ...admin.headers, 'if-match': etag },
      payload: { [field]: 'Tab one' },
    });
    t.equal(one.statusCode, 200);
    t.not(one.headers.etag, etag, 'a new version');
    const two = await app.inject({
      method: 'PATCH',
      url,
      headers: { ...admin.headers, 'if-match': etag },
      payload: { [field]: 'Tab two' },
    });
    t.equal(two.statusCode, 412);
    t.equal(json(two).code, 'precondition_failed');
    t.match(two.headers['content-type'], /application\/problem\+json/);
    t.equal(json(await app.inject({ method: 'GET', url, headers: admin.headers }))[field], 'Tab one', 'tab two changed nothing');
    // Two changes within one millisecond still make two versions.
    const a = await app.inject({ method: 'PATCH', url, headers: admin.headers, payload: { [field]: 'A' } });
    const b = await app.inject({ method: 'PATCH', url, headers: admin.headers, payload: { [field]: 'B' } });
    t.not(a.headers.etag, b.headers.etag);
    t.equal(
      (
        await app.inject({
          method: 'PATCH',
          url,
          headers: { ...admin.headers, 'if-match': a.headers.etag as string },
          payload: { [field]: 'C' },
        })
      ).statusCode,
      412,
    );
    // Without If-Match, as before: the change applies.
    t.equal((await app.inject({ method: 'PATCH', url, headers: admin.headers, payload: { [field]: 'Last' } })).statusCode, 200);
    t.equal(
      (await app.inject({ method: 'PATCH', url, headers: { ...admin.headers, 'if-match': '*' }, payload: { [field]: 'Star' } })).statusCode,
      200,
    );
  });

  t.test(`${kind}: DELETE with a stale If-Match is refused, with the current one it deletes`, async (t) => {
    const current = (await app.inject({ method: 'GET', url, headers: admin.headers })).headers.etag as string;
    const stale = await app.inject({ method: 'DELETE', url, headers: { ...admin.headers, 'if-match': '"1"' } });
    t.equal(stale.statusCode, 412);
    t.equal((await app.inject({ method: 'GET', url, headers: admin.headers })).statusCode, 200, 'still there');
    if (kind === 'contacts') {
      t.equal((await app.inject({ method: 'DELETE', url, headers: { ...admin.headers, 'if-match': current } })).statusCode, 204);
      t.equal(
        (await app.inject({ method: 'DELETE', url, headers: { ...admin.headers, 'if-match': current } })).statusCode,
        404,
        'gone: 404, not 412',
      );
    }
  });
}
