// The breaking-change differ on small documents (each rule, and the changes that are not breaking), and the check
// `make test` runs: every breaking change since openapi/baseline.json is declared in openapi/CHANGELOG.md.
import { readFile } from 'node:fs/promises';
import t from 'tap';
import {
  BASELINE_FILE,
  breakingChanges,
  CHANGELOG_FILE,
  changeLine,
  contractDiffCli,
  declaredChanges,
  type OpenApiDocument,
  undeclaredChanges,
} from '../../scripts/contract-diff.js';
import { generateOpenApiDocument } from '../../scripts/generate-openapi.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Record<string, unknown>) => ({ content: { 'application/json': { schema } } });

/** A small API: a Company with a stage enum, created by POST (CompanyCreate) and read by GET, filtered by `stage`. */
function api(): OpenApiDocument & { components: { schemas: Record<string, Record<string, unknown>> } } {
  return {
    paths: {
      '/companies/': {
        get: {
          parameters: [{ name: 'stage', in: 'query', required: false, schema: ref('Stage') }],
          responses: { '200': json({ type: 'array', items: ref('Company') }) },
        },
        post: { requestBody: { required: true, ...json(ref('CompanyCreate')) }, responses: { '201': json(ref('Company')) } },
      },
      '/companies/{id}/': {
        get: {
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { '200': json(ref('Company')) },
        },
      },
    },
    components: {
      schemas: {
        Stage: { title: 'Stage', type: 'string', enum: ['lead', 'customer'] },
        Company: {
          title: 'Company',
          type: 'object',
          required: ['id', 'name', 'stage'],
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            stage: ref('Stage'),
            email: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          },
        },
        CompanyCreate: {
          title: 'CompanyCreate',
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: { name: { type: 'string' }, stage: ref('Stage'), email: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
        },
      },
    },
  };
}

const lines = (before: OpenApiDocument, after: OpenApiDocument) => breakingChanges(before, after).map(changeLine);

t.test('each rule: what is removed, retyped, renamed or newly required is reported once, where it happened', async (t) => {
  const cases: Array<[string, (document: ReturnType<typeof api>) => void, string[]]> = [
    ['operation removed', (d) => delete d.paths!['/companies/{id}/'], ['operation-removed GET /companies/{id}/']],
    ['response removed', (d) => delete d.paths!['/companies/']!.post!.responses!['201'], ['response-removed POST /companies/ 201']],
    [
      'parameter removed',
      (d) => {
        d.paths!['/companies/']!.get!.parameters = [];
      },
      ['parameter-removed GET /companies/ query stage'],
    ],
    [
      'optional parameter made required',
      (d) => {
        d.paths!['/companies/']!.get!.parameters![0]!.required = true;
      },
      ['required-added GET /companies/ query stage'],
    ],
    [
      'new required parameter',
      (d) => {
        d.paths!['/companies/']!.get!.parameters!.push({ name: 'q', in: 'query', required: true, schema: { type: 'string' } });
      },
      ['required-added GET /companies/ query q'],
    ],
    [
      'field removed',
      (d) => delete (d.components.schemas.Company!.properties as Record<string, unknown>).email,
      ['field-removed Company.email'],
    ],
    [
      'enum value removed',
      (d) => {
        d.components.schemas.Stage!.enum = ['lead'];
      },
      ['enum-value-removed Stage: "customer"'],
    ],
    [
      'type changed',
      (d) => {
        (d.components.schemas.Company!.properties as Record<string, unknown>).id = { type: 'integer' };
      },
      ['type-changed Company.id: string -> integer'],
    ],
    [
      'a response field may now be null',
      (d) => {
        (d.components.schemas.Company!.properties as Record<string, unknown>).name = { anyOf: [{ type: 'string' }, { type: 'null' }] };
      },
      ['type-changed Company.name: may now be null'],
    ],
    [
      'a request field no longer takes null',
      (d) => {
        (d.components.schemas.CompanyCreate!.properties as Record<string, unknown>).email = { type: 'string' };
      },
      ['type-changed CompanyCreate.email: null no longer accepted'],
    ],
    [
      'optional request field made required',
      (d) => {
        d.components.schemas.CompanyCreate!.required = ['name', 'stage'];
      },
      ['required-added CompanyCreate.stage'],
    ],
    ['component removed', (d) => delete d.components.schemas.Stage, ['component-removed Stage']],
    [
      'component renamed',
      (d) => {
        d.components.schemas.LifecycleStage = { ...d.components.schemas.Stage, title: 'LifecycleStage' };
        delete d.components.schemas.Stage;
        const text = JSON.stringify(d).replaceAll('#/components/schemas/Stage"', '#/components/schemas/LifecycleStage"');
        Object.assign(d, JSON.parse(text));
      },
      ['component-renamed Stage: now LifecycleStage'],
    ],
    [
      'a reference to another component',
      (d) => {
        d.paths!['/companies/{id}/']!.get!.responses!['200'] = json(ref('CompanyCreate'));
      },
      ['type-changed GET /companies/{id}/ 200: Company -> CompanyCreate'],
    ],
  ];
  for (const [label, mutate, expected] of cases) {
    const after = api();
    mutate(after);
    t.same(lines(api(), after), expected, label);
  }
  const optionalBody = api();
  optionalBody.paths!['/companies/']!.post!.requestBody!.required = false;
  t.same(lines(optionalBody, api()), ['required-added POST /companies/ request body'], 'an optional body made required');
});

t.test('additions and equivalent forms are not breaking', async (t) => {
  const cases: Array<[string, (document: ReturnType<typeof api>) => void]> = [
    [
      'a new operation',
      (d) => {
        d.paths!['/contacts/'] = { get: { responses: { '200': json({ type: 'array' }) } } };
      },
    ],
    [
      'a new optional request field',
      (d) => {
        (d.components.schemas.CompanyCreate!.properties as Record<string, unknown>).website = { type: 'string' };
      },
    ],
    [
      'a new response field',
      (d) => {
        (d.components.schemas.Company!.properties as Record<string, unknown>).website = { type: 'string' };
      },
    ],
    [
      'a new enum value',
      (d) => {
        d.components.schemas.Stage!.enum = ['lead', 'customer', 'inactive'];
      },
    ],
    [
      'a new component',
      (d) => {
        d.components.schemas.Contact = { type: 'object' };
      },
    ],
    [
      'a new optional parameter',
      (d) => {
        d.paths!['/companies/']!.get!.parameters!.push({ name: 'q', in: 'query', schema: { type: 'string' } });
      },
    ],
    [
      'descriptions',
      (d) => {
        d.components.schemas.Company!.description = 'A company.';
      },
    ],
    [
      'a request field that now takes null',
      (d) => {
        (d.components.schemas.CompanyCreate!.properties as Record<string, unknown>).name = {
          anyOf: [{ type: 'string' }, { type: 'null' }],
        };
      },
    ],
  ];
  for (const [label, mutate] of cases) {
    const after = api();
    mutate(after);
    t.same(lines(api(), after), [], label);
  }
  // What this issue did: inline schemas and unions of one-value enums became named components with string enums.
  const inline = api();
  const schemas = inline.components.schemas;
  const stage = {
    anyOf: [
      { type: 'string', enum: ['lead'] },
      { type: 'string', const: 'customer' },
    ],
  };
  const company = JSON.parse(JSON.stringify(schemas.Company).replaceAll('{"$ref":"#/components/schemas/Stage"}', JSON.stringify(stage)));
  inline.paths!['/companies/']!.get!.responses!['200'] = json({ type: 'array', items: company });
  inline.paths!['/companies/{id}/']!.get!.responses!['200'] = json(company);
  inline.components.schemas = { CompanyCreate: schemas.CompanyCreate!, Stage: schemas.Stage! };
  t.same(lines(inline, api()), [], 'inline schemas moved into components, unions of literals as enums');
});

t.test('the changelog declares changes under "## Unreleased" as `- breaking: `<kind> <where>`` lines', async (t) => {
  const changelog = [
    '# Changelog',
    '## Unreleased',
    '- breaking: `field-removed Company.email` (replaced by `emails`)',
    'Prose that mentions - breaking: `nothing` mid-line.',
    '## 1.0.0',
    '- breaking: `operation-removed GET /old/`',
  ].join('\n');
  t.same([...declaredChanges(changelog)], ['field-removed Company.email'], 'only the unreleased section, only list lines');
  const after = api();
  delete (after.components.schemas.Company!.properties as Record<string, unknown>).email;
  delete after.paths!['/companies/{id}/'];
  t.same(
    undeclaredChanges(api(), after, changelog).map(changeLine),
    ['operation-removed GET /companies/{id}/'],
    'what is not declared fails',
  );
  t.same(undeclaredChanges(api(), api(), '# Changelog\n'), [], 'no change: nothing to declare');
});

t.test('every breaking change since openapi/baseline.json is declared in openapi/CHANGELOG.md', async (t) => {
  const baseline = JSON.parse(await readFile(BASELINE_FILE, 'utf8')) as OpenApiDocument;
  const current = JSON.parse(await generateOpenApiDocument()) as OpenApiDocument;
  const undeclared = undeclaredChanges(baseline, current, await readFile(CHANGELOG_FILE, 'utf8'));
  t.same(
    undeclared.map(changeLine),
    [],
    'Undeclared breaking changes: undo them, or declare each under "## Unreleased" in openapi/CHANGELOG.md as ' +
      '"- breaking: `<kind> <where>`" with what clients must do (docs/api-conventions.md: Breaking changes).',
  );
});

t.test('make contract-diff lists the breaking changes between two git refs', async (t) => {
  const said: string[] = [];
  const output = { log: (line: string) => void said.push(line), error: (line: string) => void said.push(line) };
  t.equal(await contractDiffCli(['HEAD', 'HEAD'], output), 0);
  t.same(said, ['0 breaking change(s) from HEAD to HEAD.']);
  said.length = 0;
  t.equal(await contractDiffCli([], output), 2, 'usage without FROM');
  t.match(said[0], /usage: make contract-diff FROM=/);
});
