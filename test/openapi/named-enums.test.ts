// Named enums validate as the unions of literals they replaced did: same status, same fields, same messages, in
// bodies and query strings, and the values they list are the ones the document names.
import type { LightMyRequestResponse } from 'fastify';
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { createUser } from '../helpers/fixtures.js';
import { crmWorkspaces } from '../tenancy/crm-workspaces.js';

const { app } = await buildTestApp(t);
const { a, memberA } = await crmWorkspaces(app);
const owner = await createUser(app, { membership: { organizationId: a.id, role: 'owner' } });
const document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
  components: { schemas: Record<string, { type?: string; enum?: string[] }> };
};

const NOT_IN_SET = ['Must be equal to constant.'];
const NOT_A_STRING = ['Must be string.', 'Must be equal to constant.'];

t.test('a value outside the set, or not a string, answers 400 with the messages of before', async (t) => {
  const member = await createUser(app, { membership: { organizationId: a.id, role: 'member' } });
  const membership = await app.db.membership.findFirstOrThrow({ where: { userId: member.id } });
  const cases: Array<[string, Promise<LightMyRequestResponse>, Record<string, string[]>]> = [
    [
      'company lifecycle_stage',
      a.call(memberA, 'POST', 'companies/', { name: 'X', lifecycle_stage: 'churned' }),
      { lifecycle_stage: NOT_IN_SET },
    ],
    [
      'company lifecycle_stage 5',
      a.call(memberA, 'POST', 'companies/', { name: 'X', lifecycle_stage: 5 }),
      { lifecycle_stage: NOT_A_STRING },
    ],
    [
      'company lifecycle_stage null',
      a.call(memberA, 'PATCH', 'companies/00000000-0000-4000-8000-000000000000/', { lifecycle_stage: null }),
      {
        lifecycle_stage: NOT_A_STRING,
      },
    ],
    ['list filter', a.call(memberA, 'GET', 'companies/?lifecycle_stage=churned'), { lifecycle_stage: NOT_IN_SET }],
    ['member role', a.call(owner, 'PATCH', `members/${membership.id}/`, { role: 'superuser' }), { role: NOT_IN_SET }],
    ['invitation role', a.call(owner, 'POST', 'invitations/', { email: 'x@example.test', role: 'owner' }), { role: NOT_IN_SET }],
    [
      'automation trigger',
      a.call(owner, 'POST', 'automations/', {
        name: 'n',
        trigger: 'company.archived',
        action_type: 'webhook',
        action_config: { url: 'https://hooks.example.test/' },
      }),
      { trigger: NOT_IN_SET },
    ],
  ];
  for (const [label, response, errors] of cases) {
    const res = await response;
    t.equal(res.statusCode, 400, label);
    t.same(json(res).errors, errors, `${label}: errors`);
  }
});

t.test('every value of a named enum is accepted where it is used', async (t) => {
  const stages = document.components.schemas.LifecycleStage?.enum ?? [];
  t.same(stages, ['lead', 'prospect', 'customer', 'inactive']);
  for (const stage of stages) {
    const res = await a.call(memberA, 'POST', 'companies/', { name: `Stage ${stage}`, lifecycle_stage: stage });
    t.equal(res.statusCode, 201, stage);
    t.equal(json(res).lifecycle_stage, stage);
    const listed = await a.call(memberA, 'GET', `companies/?lifecycle_stage=${stage}`);
    t.ok(
      json(listed).every((company: { lifecycle_stage: string }) => company.lifecycle_stage === stage),
      `filter ${stage}`,
    );
  }
});
