// CSV imports of custom field columns (`custom.<key>`): values parsed by type and checked as the API checks them, a
// failed row naming its line and column, unknown and archived keys refused before anything is stored, required
// fields enforced as on create, upserts merging, and the export → import round trip between two workspaces.
import t from 'tap';
import { runDueJobs } from '../../src/jobs/queue.js';
import { importTasks } from '../../src/modules/imports/import-job.js';
import { threadConnection } from '../../src/modules/imports/import-thread.js';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser, type SignedIn } from '../helpers/fixtures.js';
import { multipartForm } from '../helpers/multipart.js';
import { created, crmWorkspaces, type Workspace } from '../tenancy/crm-workspaces.js';

const { app, databaseUrl } = await buildTestApp(t, {}, { backgroundWorkers: false });
const { a, b, memberA, viewerA, memberB } = await crmWorkspaces(app);
const adminA = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
// One user in both workspaces: a `member` value means the same person on either side of the round trip.
const adminB = await createUser(app, { membership: { organizationId: b.id, role: 'admin' } });
await app.db.membership.create({ data: { organizationId: a.id, userId: adminB.id, role: 'member' } });

const options = (...values: string[]) => values.map((value) => ({ value, label: value.toUpperCase() }));
/** The same definitions in a workspace (its admin defines them). */
async function defineAll(ws: Workspace, admin: SignedIn) {
  const define = (key: string, type: string, extra: Record<string, unknown> = {}) =>
    created(ws.call(admin, 'POST', 'custom-fields/', { object: 'company', key, label: key, type, ...extra }));
  await define('note_text', 'text');
  await define('seats', 'number');
  await define('mrr', 'decimal');
  await define('active', 'boolean');
  await define('renewal', 'date');
  await define('signed_at', 'datetime');
  await define('portal', 'url');
  await define('plan', 'select', { options: options('free', 'pro') });
  await define('tags', 'multi_select', { options: options('vip', 'partner', 'old') });
  await define('owner', 'member');
}
await defineAll(a, adminA);
await defineAll(b, adminB);

const upload = (ws: Workspace, user: SignedIn, fields: Record<string, string>) => {
  const { payload, contentType } = multipartForm(fields);
  return app.inject({
    method: 'POST',
    url: `/api/v1/organizations/${ws.id}/imports/`,
    headers: { ...user.headers, 'content-type': contentType },
    payload,
  });
};
const runJobs = () => runDueJobs(databaseUrl, importTasks({ db: app.db, pool: app.pg, connection: threadConnection(app.config) }));
/** Uploads, runs the job and answers the finished import. */
async function imported(ws: Workspace, user: SignedIn, fields: Record<string, string>) {
  const res = await upload(ws, user, fields);
  if (res.statusCode !== 202) throw new Error(`upload: ${res.statusCode} ${res.body}`);
  await runJobs();
  return json(await ws.call(user, 'GET', `imports/${json(res).id}/`));
}
const customOf = async (ws: Workspace, user: SignedIn, name: string) => {
  const found = json<{ results: { custom_fields: Record<string, unknown> }[] }>(
    await ws.call(user, 'POST', 'companies/query/', { filter: { field: 'name', op: 'eq', value: name } }),
  );
  return found.results.map((company) => company.custom_fields);
};

t.test('every type parsed from its cell as the API takes it; bad cells fail their row, naming the column', async (t) => {
  const file = [
    'name,custom.seats,custom.mrr,custom.active,custom.renewal,custom.signed_at,custom.portal,custom.plan,custom.tags,custom.owner',
    `Typed,'-12.5,1234.50,TRUE,2027-01-31,2027-01-31T10:00:00+02:00,https://typed.example,pro,vip; old,${adminB.id}`,
    'Blank,,,,,,,,,',
    'Bad seats,many,,,,,,,,',
    'Bad plan,,,,,,,enterprise,,',
    'Bad several,,1.1234567,yes,2027-02-30,,ftp://x.example,,gold,',
    `Bad owner,,,,,,,,,${memberB.id}`,
  ].join('\n');
  const done = await imported(a, memberA, { kind: 'companies', file });
  t.match(done, { status: 'succeeded', created: 2, failed_rows: 4 });
  t.same(await customOf(a, viewerA, 'Typed'), [
    {
      note_text: null,
      seats: -12.5,
      mrr: '1234.50',
      active: true,
      renewal: '2027-01-31',
      signed_at: '2027-01-31T08:00:00.000Z',
      portal: 'https://typed.example',
      plan: 'pro',
      tags: ['vip', 'old'],
      owner: adminB.id,
    },
  ]);
  t.same(await customOf(a, viewerA, 'Blank'), [
    {
      note_text: null,
      seats: null,
      mrr: null,
      active: null,
      renewal: null,
      signed_at: null,
      portal: null,
      plan: null,
      tags: null,
      owner: null,
    },
  ]);
  const errors = (await a.call(viewerA, 'GET', `imports/${done.id}/errors/`)).body.split('\r\n').filter(Boolean);
  t.equal(errors.length, 5);
  t.match(errors[1], /^4,Bad seats,.*custom\.seats: /);
  t.match(errors[2], /^5,Bad plan,.*custom\.plan: Expected one of: free, pro\./);
  t.match(errors[3], /^6,Bad several,/);
  for (const column of ['custom.mrr', 'custom.active', 'custom.renewal', 'custom.portal', 'custom.tags']) {
    t.match(errors[3], `${column}: `, `row 6 names ${column}`);
  }
  t.match(errors[4], /^7,Bad owner,.*custom\.owner: Not a member of this workspace\./);
  t.equal((await customOf(a, viewerA, 'Bad plan')).length, 0, 'a failed row writes nothing');
});

t.test('unknown and archived keys are refused by name before anything is stored', async (t) => {
  const before = await app.db.import.count();
  const unknown = await upload(a, memberA, { kind: 'companies', file: 'name,custom.colour\nAcme,red\n' });
  t.equal(unknown.statusCode, 400);
  t.match(json(unknown).errors.file[0], /"custom\.colour": this workspace has no custom field "colour"/);
  const mapped = await upload(a, memberA, { kind: 'companies', file: 'name,Colour\nAcme,red\n', mapping: '{"Colour": "custom.colour"}' });
  t.equal(mapped.statusCode, 400);
  t.match(json(mapped).errors.mapping[0], /no custom field "colour"/);
  const fields = json<{ id: string; key: string }[]>(await a.call(adminA, 'GET', 'custom-fields/?object=company'));
  const field = fields.find((f) => f.key === 'note_text');
  t.equal((await a.call(adminA, 'DELETE', `custom-fields/${field?.id}/`)).statusCode, 204);
  const archived = await upload(a, memberA, { kind: 'companies', file: 'name,custom.note_text\nAcme,hi\n' });
  t.equal(archived.statusCode, 400);
  t.match(json(archived).errors.file[0], /"custom\.note_text": the custom field "note_text" is archived/);
  t.equal((await a.call(adminA, 'POST', `custom-fields/${field?.id}/restore/`)).statusCode, 200);
  t.equal(await app.db.import.count(), before, 'nothing stored');
  const asMapped = await imported(a, memberA, { kind: 'companies', file: 'name,Seats\nMapped,3\n', mapping: '{"Seats": "custom.seats"}' });
  t.match(asMapped, { status: 'succeeded', created: 1 });
  t.same((await customOf(a, viewerA, 'Mapped'))[0]?.seats, 3, 'a mapped column fills its custom field');
});

t.test('a required field: a file without its column is refused, an empty cell fails a create, an upsert keeps the value', async (t) => {
  const required = await created(
    a.call(adminA, 'POST', 'custom-fields/', { object: 'company', key: 'region', label: 'Region', type: 'text', required: true }),
  );
  t.teardown(async () => {
    await a.call(adminA, 'DELETE', `custom-fields/${required.id}/`);
  });
  const missing = await upload(a, memberA, { kind: 'companies', file: 'name\nNo region\n' });
  t.equal(missing.statusCode, 400);
  t.match(json(missing).errors.file[0], /required field custom\.region/);
  const done = await imported(a, memberA, {
    kind: 'companies',
    file: 'name,website,custom.region,custom.plan\nHas region,https://region.example,EMEA,free\nNo region,,,\n',
  });
  t.match(done, { status: 'succeeded', created: 1, failed_rows: 1 });
  const errors = (await a.call(viewerA, 'GET', `imports/${done.id}/errors/`)).body;
  t.match(errors, /3,No region,,,,custom\.region: This custom field is required\./);
  const upsert = await imported(a, memberA, {
    kind: 'companies',
    mode: 'upsert',
    file: 'name,website,custom.region,custom.plan,custom.seats\nHas region,https://region.example,,,40\n',
  });
  t.match(upsert, { status: 'succeeded', created: 0, updated: 1 });
  const [values] = await customOf(a, viewerA, 'Has region');
  t.match(values, { region: 'EMEA', plan: null, seats: 40 }, 'empty required cell kept, empty optional cell cleared, new value merged');
});

t.test('round trip: export with custom columns → import into another workspace with the same definitions → same values', async (t) => {
  const bodies = [
    { name: 'Trip one', custom_fields: { note_text: '=risky', seats: 1e21, mrr: '-0.000001', active: false, tags: [], owner: adminB.id } },
    {
      name: 'Trip two',
      custom_fields: { plan: 'free', tags: ['partner', 'vip'], renewal: '2024-02-29', signed_at: '2027-01-31T10:00:00Z' },
    },
    { name: 'Trip three', custom_fields: { portal: 'http://intranet.example/a?b=c,d', note_text: 'line\nbreak, "quoted"' } },
  ];
  for (const body of bodies) await created(a.call(memberA, 'POST', 'companies/', body));
  const exported = await a.call(viewerA, 'GET', 'companies/export/');
  t.equal(exported.statusCode, 200);
  const done = await imported(b, memberB, { kind: 'companies', file: exported.body });
  t.equal(done.failed_rows, 0, JSON.stringify(done));
  for (const { name } of bodies) {
    const [source] = await customOf(a, viewerA, name);
    const [copy] = await customOf(b, memberB, name);
    // An empty multi_select exports as an empty cell: it comes back as no value.
    t.same(copy, { ...source, tags: (source?.tags as string[] | null)?.length ? source?.tags : null }, name);
  }
});
