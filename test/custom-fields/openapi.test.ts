// The workspace's own OpenAPI document: Redocly-clean like the static one, each record's custom_fields typed (select
// values as an enum), rebuilt when a definition changes, never naming another workspace's fields; and a client
// generated from it (openapi-typescript) that reads a custom field by name compiles under --strict.
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import openapiTS, { astToString } from 'openapi-typescript';
import { projectRoot } from '../../src/lib/project-root.js';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { created, crmWorkspaces } from '../tenancy/crm-workspaces.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const { app } = await buildTestApp(t);
const { a, b, viewerA, memberB } = await crmWorkspaces(app);
const admin = await createUser(app, { membership: { organizationId: a.id, role: 'admin' } });
const adminB = await createUser(app, { membership: { organizationId: b.id, role: 'admin' } });

const define = (object: string, key: string, type: string, extra: Record<string, unknown> = {}) =>
  created(a.call(admin, 'POST', 'custom-fields/', { object, key, label: key, type, ...extra }));
await define('company', 'plan', 'select', {
  options: [
    { value: 'free', label: 'Free' },
    { value: 'pro', label: 'Pro' },
  ],
});
await define('company', 'seats', 'number', { required: true });
await define('company', 'mrr', 'decimal');
await define('company', 'renewal', 'date');
await define('company', 'tags', 'multi_select', { options: [{ value: 'vip', label: 'VIP' }] });
await define('deal', 'signed_at', 'datetime');
const hidden = await define('contact', 'hidden', 'text');
await a.call(admin, 'DELETE', `custom-fields/${hidden.id}/`);
await created(b.call(adminB, 'POST', 'custom-fields/', { object: 'company', key: 'beta_secret', label: 'B', type: 'text' }));

type Schema = Record<string, any>;
const documentOf = async (workspace = a, user = viewerA) => {
  const res = await workspace.call(user, 'GET', 'openapi.json');
  if (res.statusCode !== 200) throw new Error(`${res.statusCode}: ${res.body}`);
  return json<{ components: { schemas: Record<string, Schema> } }>(res);
};

t.test("the document types each record's custom fields", async (t) => {
  const { components } = await documentOf();
  const company = components.schemas.Company?.properties.custom_fields;
  t.same(company.required, ['plan', 'seats', 'mrr', 'renewal', 'tags'], 'every active key in an answer');
  t.equal(company.additionalProperties, false);
  t.same(company.properties.plan.anyOf, [{ type: 'string', enum: ['free', 'pro'] }, { type: 'null' }], 'a select as an enum');
  t.same(company.properties.seats.anyOf[0], { type: 'number' });
  t.same(company.properties.mrr.anyOf[0], { type: 'string', pattern: '^-?\\d{1,15}(\\.\\d{1,6})?$' });
  t.same(company.properties.renewal.anyOf[0], { type: 'string', format: 'date' });
  t.same(company.properties.tags.anyOf[0], { type: 'array', items: { type: 'string', enum: ['vip'] }, uniqueItems: true });
  const create = components.schemas.CompanyCreate;
  t.ok(create?.required.includes('custom_fields'), 'a required field makes custom_fields required on create');
  t.same(create?.properties.custom_fields.required, ['seats']);
  t.same(create?.properties.custom_fields.properties.seats.type, 'number', 'not nullable where required');
  t.same(components.schemas.CompanyUpdate?.properties.custom_fields.required, undefined, 'a PATCH names what it changes');
  t.same(Object.keys(components.schemas.Deal?.properties.custom_fields.properties), ['signed_at']);
  t.same(components.schemas.Contact?.properties.custom_fields.properties, {}, 'an archived field is left out');
  const text = JSON.stringify(await documentOf());
  t.notOk(text.includes('beta_secret'), "never another workspace's field");
  const other = JSON.stringify(await documentOf(b, memberB));
  t.ok(other.includes('beta_secret'));
  t.notOk(other.includes('"seats"'), "B's document does not name A's fields");
});

t.test('a change of a definition changes the document at once', async (t) => {
  const field = await define('task', 'effort', 'number');
  t.ok((await documentOf()).components.schemas.Task?.properties.custom_fields.properties.effort);
  await a.call(admin, 'DELETE', `custom-fields/${field.id}/`);
  t.notOk((await documentOf()).components.schemas.Task?.properties.custom_fields.properties.effort, 'archived: gone');
  await a.call(admin, 'POST', `custom-fields/${field.id}/restore/`);
  t.ok((await documentOf()).components.schemas.Task?.properties.custom_fields.properties.effort, 'restored: back');
  t.equal((await a.call(viewerA, 'GET', 'openapi.json')).statusCode, 200, 'VIEW_CRM reads it');
  t.equal((await a.call(memberB, 'GET', 'openapi.json')).statusCode, 404, 'not a member');
});

t.test('Redocly lints the workspace document clean (zero warnings), as make lint-openapi does the static one', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'workspace-openapi-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // The project's configuration and its ignore list (the same problems, keyed by this file's name), as make lint-openapi.
  await copyFile(path.join(projectRoot, 'redocly.yaml'), path.join(dir, 'redocly.yaml'));
  const ignored = await readFile(path.join(projectRoot, '.redocly.lint-ignore.yaml'), 'utf8');
  await writeFile(path.join(dir, '.redocly.lint-ignore.yaml'), ignored.replace('openapi/openapi.json:', 'openapi.json:'));
  await writeFile(path.join(dir, 'openapi.json'), JSON.stringify(await documentOf(), null, 2));
  const redocly = path.join(projectRoot, 'node_modules', '.bin', 'redocly');
  const result = await run(redocly, ['lint', '--max-problems', '1000', 'openapi.json'], { cwd: dir }).then(
    (done) => ({ code: 0, output: `${done.stdout}${done.stderr}` }),
    (failure: { code: number; stdout: string; stderr: string }) => ({ code: failure.code, output: `${failure.stdout}${failure.stderr}` }),
  );
  t.equal(result.code, 0, result.output);
  t.notMatch(result.output, /You have \d+ warning/, result.output);
});

t.test('a client generated from the workspace document reads a custom field by name and compiles under --strict', async (t) => {
  const source = astToString(await openapiTS(JSON.stringify(await documentOf()), { rootTypes: true, rootTypesNoSchemaPrefix: true }));
  const dir = await mkdtemp(path.join(tmpdir(), 'workspace-client-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'api.d.ts'), source);
  await writeFile(
    path.join(dir, 'usage.ts'),
    [
      "import type { Company, CompanyCreate } from './api.js';",
      'export function planOf(company: Company): string {',
      "  const plan: 'free' | 'pro' | null = company.custom_fields.plan;",
      '  const seats: number | null = company.custom_fields.seats;',
      "  const tags: ('vip')[] | null = company.custom_fields.tags;",
      "  return [plan ?? 'none', seats ?? 0, tags?.length ?? 0].join(' ');",
      '}',
      "export const body: CompanyCreate = { name: 'Initech', custom_fields: { seats: 3, plan: 'pro' } };",
      '// @ts-expect-error not an option of the field',
      "export const wrongOption: CompanyCreate = { name: 'Initech', custom_fields: { seats: 3, plan: 'gold' } };",
      '// @ts-expect-error the required field is missing',
      "export const missing: CompanyCreate = { name: 'Initech', custom_fields: { plan: 'pro' } };",
      "// @ts-expect-error another workspace's field is not named here",
      'export const secret = (company: Company) => company.custom_fields.beta_secret;',
      '',
    ].join('\n'),
  );
  const tsc = require.resolve('typescript/bin/tsc');
  const args = ['--noEmit', '--strict', '--target', 'ES2022', '--module', 'NodeNext', '--moduleResolution', 'NodeNext'];
  const result = await run(process.execPath, [tsc, ...args, path.join(dir, 'usage.ts')], { cwd: dir }).then(
    () => ({ code: 0, output: '' }),
    (failure: { code: number; stdout: string }) => ({ code: failure.code, output: failure.stdout }),
  );
  t.equal(result.code, 0, result.output);
});
