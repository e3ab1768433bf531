// Property: random filter trees over a few hundred companies select exactly what an in-JS reference of the operators
// selects (text, enum and datetime fields; and/or/not), read through complete pages of the query.
import t from 'tap';
import fc from 'fast-check';
import { buildTestApp, json } from '../helpers/app.js';
import { crmWorkspaces } from '../tenancy/crm-workspaces.js';

t.setTimeout(600_000);
const { app } = await buildTestApp(t);
const { a, memberA } = await crmWorkspaces(app);

const WORDS = ['', 'a', 'A', 'ab', 'Ab', 'ba', 'b'];
const STAGES = ['lead', 'prospect', 'customer', 'inactive'] as const;
const random = fc.sample(
  fc.record({
    name: fc.constantFrom('alpha', 'Alpha', 'beta', 'ab', 'Ba', 'b'),
    industry: fc.option(fc.constantFrom(...WORDS), { nil: null }),
    city: fc.option(fc.constantFrom(...WORDS), { nil: null }),
    lifecycle_stage: fc.constantFrom(...STAGES),
    created: fc.integer({ min: 0, max: 20 }),
  }),
  { numRuns: 300, seed: 46 },
);
const BASE = Date.UTC(2026, 0, 1);
await app.db.company.createMany({
  data: random.map((row) => ({
    organizationId: a.id,
    name: row.name,
    industry: row.industry,
    city: row.city,
    lifecycleStage: row.lifecycle_stage,
    createdAt: new Date(BASE + row.created * 86_400_000),
  })),
});
type Company = { id: string; name: string; industry: string | null; city: string | null; lifecycle_stage: string; created_at: string };
async function everything(body: object): Promise<Company[]> {
  const rows: Company[] = [];
  let cursor: string | null = null;
  do {
    const res = await a.call(memberA, 'POST', 'companies/query/', { ...body, limit: 200, ...(cursor ? { cursor } : {}) });
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
    const page = json<{ results: Company[]; next_cursor: string | null }>(res);
    rows.push(...page.results);
    cursor = page.next_cursor;
  } while (cursor);
  return rows;
}
const companies = await everything({});

type Condition = { field: string; op: string; value?: unknown };
type Tree = Condition | { and: Tree[] } | { or: Tree[] } | { not: Tree };

const text = (field: 'name' | 'industry' | 'city') =>
  fc.oneof(
    fc.record({
      field: fc.constant(field),
      op: fc.constantFrom('eq', 'neq', 'contains', 'starts_with'),
      value: fc.constantFrom(...WORDS.slice(1)),
    }),
    fc.record({
      field: fc.constant(field),
      op: fc.constantFrom('in', 'not_in'),
      value: fc.uniqueArray(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 }),
    }),
    fc.record({ field: fc.constant(field), op: fc.constantFrom('is_empty', 'is_not_empty') }),
  );
const condition: fc.Arbitrary<Condition> = fc.oneof(
  text('name'),
  text('industry'),
  text('city'),
  fc.record({ field: fc.constant('lifecycle_stage'), op: fc.constantFrom('eq', 'neq'), value: fc.constantFrom(...STAGES) }),
  fc.record({
    field: fc.constant('created_at'),
    op: fc.constantFrom('lt', 'lte', 'gt', 'gte', 'eq'),
    value: fc.integer({ min: 0, max: 20 }).map((day) => new Date(BASE + day * 86_400_000).toISOString()),
  }),
);
const { tree } = fc.letrec<{ tree: Tree }>((self) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true, maxDepth: 4 },
    condition,
    fc.record({ and: fc.array(self('tree'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ or: fc.array(self('tree'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ not: self('tree') }),
  ),
}));

/** The contract's operators, as a reader of the documentation would write them. */
function holds(node: Tree, row: Company): boolean {
  if ('and' in node) return node.and.every((child) => holds(child, row));
  if ('or' in node) return node.or.some((child) => holds(child, row));
  if ('not' in node) return !holds(node.not, row);
  const value = row[node.field as keyof Company] as string | null;
  const wanted = node.value;
  const lower = (s: unknown) => String(s).toLowerCase();
  switch (node.op) {
    case 'eq':
      return node.field === 'created_at'
        ? value !== null && Date.parse(value) === Date.parse(String(wanted))
        : value !== null && value === wanted;
    case 'neq':
      return value !== wanted;
    case 'in':
      return value !== null && (wanted as unknown[]).includes(value);
    case 'not_in':
      return value === null || !(wanted as unknown[]).includes(value);
    case 'contains':
      return value !== null && lower(value).includes(lower(wanted));
    case 'starts_with':
      return value !== null && lower(value).startsWith(lower(wanted));
    case 'is_empty':
      return value === null || value === '';
    case 'is_not_empty':
      return value !== null && value !== '';
    default: {
      if (value === null) return false;
      const [left, right] = [Date.parse(value), Date.parse(String(wanted))];
      return { lt: left < right, lte: left <= right, gt: left > right, gte: left >= right }[node.op as 'lt'] ?? false;
    }
  }
}

t.test('random filter trees select what the reference selects', async (t) => {
  t.equal(companies.length, 300);
  await fc.assert(
    fc.asyncProperty(tree, async (filter) => {
      const got = (await everything({ filter })).map((row) => row.id).sort();
      const expected = companies
        .filter((row) => holds(filter, row))
        .map((row) => row.id)
        .sort();
      if (JSON.stringify(got) !== JSON.stringify(expected)) {
        throw new Error(`${JSON.stringify(filter)}: ${got.length} rows, the reference ${expected.length}`);
      }
    }),
    { numRuns: 150, seed: 4646 },
  );
  t.pass('150 trees agree');
});

t.test('random sorts page through every record once, in the order of their keys', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.uniqueArray(fc.constantFrom('name', 'industry', 'city', 'lifecycle_stage', 'created_at'), { minLength: 1, maxLength: 3 }),
      fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      fc.integer({ min: 7, max: 60 }),
      async (fields, descending, limit) => {
        const sort = fields.map((field, i) => ({ field, direction: descending[i] ? 'desc' : 'asc' }));
        const ids: string[] = [];
        let cursor: string | null = null;
        do {
          const res = await a.call(memberA, 'POST', 'companies/query/', { sort, limit, ...(cursor ? { cursor } : {}) });
          const page = json<{ results: Company[]; next_cursor: string | null }>(res);
          if (page.next_cursor && page.results.length !== limit) throw new Error('short page');
          ids.push(...page.results.map((row) => row.id));
          cursor = page.next_cursor;
        } while (cursor);
        if (ids.length !== 300 || new Set(ids).size !== 300) throw new Error(`${JSON.stringify(sort)}: ${ids.length} ids`);
      },
    ),
    { numRuns: 25, seed: 4647 },
  );
  t.pass('25 sorts walk completely');
});
