// Property-based fuzzing driven by the committed OpenAPI document: generated requests, checked against what the document declares.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import pg from 'pg';
import type { InjectOptions } from 'fastify';
import type { App } from '../../src/app.js';
import { projectRoot } from '../../src/lib/project-root.js';

type Schema = Record<string, any>;

export interface Operation {
  id: string;
  method: string;
  path: string;
  params: { name: string; in: 'path' | 'query'; schema: Schema }[];
  body: Schema | undefined;
  responses: Map<string, ValidateFunction | null>;
  /** Installation-wide (the `installation` tag): its answers may name every workspace, never another's records. */
  installationWide: boolean;
}

/** A caller of the fuzzed requests; `foreignIds` must never appear in an answer to it. */
export interface Caller {
  name: string;
  authorization: string | undefined;
  foreignIds: string[];
  /** Of `foreignIds`, the workspaces themselves: an installation administrator's installation-wide answers may name them. */
  foreignWorkspaceIds?: string[];
}

export interface Scenery {
  callers: Caller[];
  /** Values for path parameters by name (ids of both workspaces, so cross-tenant access is tried too). */
  pathValues: Record<string, string[]>;
}

export interface Finding {
  operation: string;
  caller: string;
  request: InjectOptions;
  status: number;
  problem: string;
  body: string;
}

export interface FuzzReport {
  requests: number;
  counts: Map<string, Map<number, number>>;
  findings: Finding[];
}

/**
 * Operations that would destroy the scenery they are fuzzed against when a generated request happens to be valid
 * (the seeded callers' own sessions, passwords, accounts and workspaces); every other operation is fuzzed.
 */
export const SPARED = new Set(['deleteAccount', 'changePassword', 'logout', 'deleteOrganization', 'completeSetup', 'testSetupSmtp']);

const document = JSON.parse(readFileSync(path.join(projectRoot, 'openapi', 'openapi.json'), 'utf8')) as Schema;

function deref(schema: Schema | undefined): Schema {
  let current = schema ?? {};
  while (typeof current.$ref === 'string') {
    current = current.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: Schema, key: string) => node[key], document);
  }
  return current;
}

/** Every operation of the document; the SPARED ones only when `includeSpared` (whose caller must not send them valid bodies). */
export function operations({ includeSpared = false } = {}): Operation[] {
  const ajv = addFormats.default(new Ajv({ strict: false, allErrors: false, validateFormats: true }));
  ajv.addSchema({ $id: 'openapi', components: document.components });
  const compile = (schema: Schema | undefined) =>
    schema ? ajv.compile(JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"openapi#/components/'))) : null;
  const result: Operation[] = [];
  for (const [route, methods] of Object.entries(document.paths as Record<string, Schema>)) {
    for (const [method, op] of Object.entries(methods)) {
      if (!includeSpared && SPARED.has(op.operationId)) continue;
      const responses = new Map<string, ValidateFunction | null>();
      for (const [status, response] of Object.entries(op.responses as Record<string, Schema>)) {
        const resolved = deref(response);
        const content = resolved.content as Record<string, { schema?: Schema }> | undefined;
        // JSON answers are checked against their schema; streamed ones (JSON lines, CSV) are not JSON documents.
        const json = Object.entries(content ?? {}).find(([type]) => type.endsWith('json') && !type.includes('ndjson'));
        const schema = json?.[1].schema;
        responses.set(status, compile(schema));
      }
      result.push({
        id: op.operationId,
        method: method.toUpperCase(),
        path: route,
        params: ((op.parameters ?? []) as Schema[]).map(deref).filter((p) => p.in === 'path' || p.in === 'query') as Operation['params'],
        body: op.requestBody
          ? deref(Object.values(deref(op.requestBody).content as Record<string, { schema: Schema }>)[0]!.schema)
          : undefined,
        responses,
        installationWide: ((op.tags ?? []) as string[]).includes('installation'),
      });
    }
  }
  return result;
}

const nasty = fc.constantFrom(
  '',
  ' ',
  '%',
  '_',
  '\\',
  '%_\\',
  "'; DROP TABLE companies; --",
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '\u0000',
  '\ud800',
  '🚀',
  'ß'.repeat(300),
  'x'.repeat(10_000),
  '00000000-0000-0000-0000-000000000000',
  'null',
  'true',
  '-1',
  '1e309',
  '9'.repeat(40),
  'a@b',
  'user@example.test',
);

/** Values that satisfy the schema (formats, lengths, enums, required fields, no extra fields): requests that can succeed. */
export function validValueOf(raw: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const schema = deref(raw);
  const branches = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  // A recursive schema (a filter tree) ends in its first branch (a condition) once deep enough.
  if (branches)
    return depth > 6 ? validValueOf(branches[0], depth + 1) : fc.oneof(...branches.map((branch) => validValueOf(branch, depth + 1)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'string': {
      if (schema.format === 'email') return fc.emailAddress().filter((e) => e.length <= (schema.maxLength ?? 254));
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'uri') return fc.constantFrom('https://example.com/', 'https://example.org/a?b=c');
      if (schema.format === 'date') return fc.constantFrom('1990-05-17', '2001-12-31');
      const minLength = Number(schema.minLength ?? 0);
      // Drawn from the pattern itself: random strings filtered by it (a six-digit code) would almost never pass.
      if (schema.pattern)
        return fc
          .stringMatching(new RegExp(schema.pattern as string, 'u'))
          .filter((text) => text.trim().length >= minLength && text.length <= Number(schema.maxLength ?? Number.POSITIVE_INFINITY));
      return fc
        .string({ minLength: Math.max(minLength, 1), maxLength: Math.max(minLength, Math.min(Number(schema.maxLength ?? 30), 30)) })
        .filter((text) => text.trim().length >= minLength && (!schema.pattern || new RegExp(schema.pattern as string, 'u').test(text)));
    }
    case 'integer':
      return fc.integer({ min: Number(schema.minimum ?? 0), max: Number(schema.maximum ?? 1000) });
    case 'number':
      return fc.double({ min: Number(schema.minimum ?? 0), max: Number(schema.maximum ?? 1000), noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return depth > 3
        ? fc.constant([])
        : fc.array(validValueOf(schema.items, depth + 1), {
            minLength: Number(schema.minItems ?? 0),
            maxLength: Math.max(Number(schema.minItems ?? 0), 3),
          });
    default: {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = (schema.required ?? []) as string[];
      return fc.record(Object.fromEntries(Object.keys(properties).map((key) => [key, validValueOf(properties[key], depth + 1)])), {
        requiredKeys: required,
      });
    }
  }
}

/** Values that fit the schema's shape most of the time, and deliberately do not the rest of the time. */
function arbitraryOf(raw: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  const schema = deref(raw);
  const wrong = depth > 2 ? fc.constant(null) : fc.oneof(fc.anything({ maxDepth: 2 }), nasty, fc.integer(), fc.constant(null));
  const branches = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (branches) return fc.oneof(...branches.map((branch) => arbitraryOf(branch, depth + 1)), wrong);
  if (schema.const !== undefined) return fc.oneof({ weight: 4, arbitrary: fc.constant(schema.const) }, { weight: 1, arbitrary: wrong });
  if (Array.isArray(schema.enum))
    return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...schema.enum) }, { weight: 1, arbitrary: wrong });
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  let fitting: fc.Arbitrary<unknown>;
  switch (type) {
    case 'string':
      fitting =
        schema.format === 'email'
          ? fc.oneof(fc.emailAddress(), nasty)
          : schema.format === 'uuid'
            ? fc.oneof(fc.uuid(), nasty)
            : schema.format === 'uri'
              ? fc.oneof(fc.webUrl(), nasty)
              : schema.format === 'date'
                ? fc.oneof(fc.constantFrom('2000-01-01', '1999-02-30', '0000-00-00'), nasty)
                : fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), nasty);
      break;
    case 'integer':
    case 'number':
      fitting = fc.oneof(fc.integer({ min: -5, max: 300 }), fc.integer(), fc.double(), fc.constantFrom(Number.MAX_SAFE_INTEGER, 1e308, -0));
      break;
    case 'boolean':
      fitting = fc.boolean();
      break;
    case 'array':
      fitting = depth > 2 ? fc.constant([]) : fc.array(arbitraryOf(schema.items, depth + 1), { maxLength: 4 });
      break;
    default: {
      if (depth > 2 || !schema.properties) return fc.oneof(fc.constant({}), wrong);
      const properties = schema.properties as Record<string, Schema>;
      const keys = Object.keys(properties);
      const record = fc.record(Object.fromEntries(keys.map((key) => [key, arbitraryOf(properties[key], depth + 1)])), {
        requiredKeys: [],
      });
      // Mostly with every required field present; sometimes missing some, or with an extra one.
      const required = (schema.required ?? []) as string[];
      fitting = fc.tuple(record, fc.boolean(), fc.option(fc.string({ maxLength: 8 }))).map(([value, fill, extra]) => {
        const result = { ...(value as Record<string, unknown>) };
        if (fill) for (const key of required) if (!(key in result)) result[key] = fc.sample(arbitraryOf(properties[key], depth + 1), 1)[0];
        if (extra) result[`x_${extra}`] = extra;
        return result;
      });
    }
  }
  return fc.oneof({ weight: 5, arbitrary: fitting }, { weight: 1, arbitrary: wrong });
}

/** A lone surrogate has no UTF-8 form: it travels as the bytes a careless client would send for it. */
export function encodePathValue(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return '%ED%A0%80';
  }
}

function requestOf(operation: Operation, scenery: Scenery): fc.Arbitrary<{ caller: Caller; request: InjectOptions }> {
  const pathArbs = operation.params
    .filter((p) => p.in === 'path')
    .map((p) =>
      fc
        .oneof(
          { weight: 4, arbitrary: fc.constantFrom(...(scenery.pathValues[p.name] ?? ['x'])) },
          { weight: 1, arbitrary: fc.oneof(fc.uuid(), nasty) },
        )
        .map((v) => [p.name, v] as const),
    );
  const queryArbs = operation.params
    .filter((p) => p.in === 'query')
    .map((p) => fc.option(fc.oneof(arbitraryOf(p.schema), nasty), { freq: 2 }).map((v) => [p.name, v] as const));
  const body = operation.body
    ? fc.oneof(
        { weight: 3, arbitrary: validValueOf(operation.body) },
        { weight: 3, arbitrary: arbitraryOf(operation.body) },
        { weight: 1, arbitrary: fc.anything({ maxDepth: 3 }) },
      )
    : fc.constant(undefined);
  return fc
    .record({
      caller: fc.constantFrom(...scenery.callers),
      pathValues: fc.tuple(...pathArbs),
      query: fc.tuple(...queryArbs),
      body,
    })
    .map(({ caller, pathValues, query, body: payload }) => {
      let url = operation.path;
      for (const [name, value] of pathValues) url = url.replace(`{${name}}`, encodePathValue(String(value)));
      const search = new URLSearchParams();
      for (const [name, value] of query)
        if (value !== null && value !== undefined) search.set(name, typeof value === 'string' ? value : JSON.stringify(value));
      const qs = search.toString();
      const request: InjectOptions = {
        method: operation.method as InjectOptions['method'],
        url: qs ? `${url}?${qs}` : url,
        headers: {
          ...(caller.authorization ? { authorization: caller.authorization } : {}),
          ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(payload !== undefined ? { payload: JSON.stringify(payload) ?? 'null' } : {}),
      };
      return { caller, request };
    });
}

/**
 * The documented security bookkeeping a refused request may write (issue 25 allows it): a user's count of wrong
 * two-factor codes and its window (issue 30's per-account limit), and when an API key was last used (it authenticated,
 * whatever the route answered). Left out of the checksums; every other column counts.
 */
const BOOKKEEPING: Record<string, string[]> = {
  users: ['two_factor_failures', 'two_factor_failures_since'],
  api_keys: ['last_used_at'],
};

/** One checksum per table: any change of any row shows (but the bookkeeping columns). */
async function checksums(client: pg.Client): Promise<Map<string, string>> {
  const { rows: tables } = await client.query<{ name: string }>(
    `SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
  );
  const row = (table: string) =>
    BOOKKEEPING[table] ? `(to_jsonb(x) ${BOOKKEEPING[table].map((column) => `- '${column}'`).join(' ')})::text` : 'x::text';
  const parts = tables.map(
    (t) =>
      `SELECT '${t.name}' AS name, md5(coalesce(string_agg(md5(${row(t.name)}), '' ORDER BY md5(${row(t.name)})), '')) AS sum FROM ${t.name} x`,
  );
  const { rows } = await client.query<{ name: string; sum: string }>(parts.join(' UNION ALL '));
  return new Map(rows.map((r) => [r.name, r.sum]));
}

/**
 * Sends one request and records its count and every way its answer breaks the rules (the checks both fuzzers and the
 * documented-statuses walk share); without a `client`, whether a refused request wrote is not checked.
 */
export async function probe(
  app: App,
  client: pg.Client | null,
  report: FuzzReport,
  operation: Operation,
  caller: Caller,
  request: InjectOptions,
  label = operation.id,
) {
  const before = client ? await checksums(client) : undefined;
  const res = await app.inject(request);
  report.requests += 1;
  const counts = report.counts.get(label) ?? new Map<number, number>();
  counts.set(res.statusCode, (counts.get(res.statusCode) ?? 0) + 1);
  report.counts.set(label, counts);
  const found = (problem: string) =>
    report.findings.push({ operation: label, caller: caller.name, request, status: res.statusCode, problem, body: res.body.slice(0, 500) });
  if (res.statusCode >= 500) found('5xx');
  const declared = operation.responses.has(String(res.statusCode)) || operation.responses.has('default');
  if (!declared) found(`status ${res.statusCode} not declared`);
  const validate = operation.responses.get(String(res.statusCode));
  if (validate && res.body) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body);
    } catch {
      found('body is not JSON');
    }
    if (parsed !== undefined && !validate(parsed)) found(`body does not match: ${JSON.stringify(validate.errors?.slice(0, 2))}`);
  }
  if (res.statusCode >= 400) {
    if (!String(res.headers['content-type'] ?? '').startsWith('application/problem+json')) found('an error that is not problem+json');
    if (/\n\s+at \S|SELECT |INSERT INTO|node_modules|PrismaClient/.test(res.body)) found('stack or SQL text in the answer');
  }
  if (client && before && res.statusCode >= 400 && res.statusCode < 500) {
    const after = await checksums(client);
    const changed = [...after].filter(([table, sum]) => before.get(table) !== sum).map(([table]) => table);
    if (changed.length > 0) found(`a ${res.statusCode} changed ${changed.join(', ')}`);
  }
  const mayName = operation.installationWide ? new Set(caller.foreignWorkspaceIds ?? []) : new Set<string>();
  const leaked = caller.foreignIds.filter((id) => !mayName.has(id) && res.body.includes(id));
  if (leaked.length > 0) found(`answer holds another workspace's id ${leaked[0]}`);
}

/** Runs `runs` generated requests (spread over every operation) and returns counts and findings. */
export async function fuzz(app: App, databaseUrl: string, scenery: Scenery, runs: number, seed: number): Promise<FuzzReport> {
  const ops = operations();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const report: FuzzReport = { requests: 0, counts: new Map(), findings: [] };
  try {
    const perOperation = Math.max(1, Math.ceil(runs / ops.length));
    for (const [index, operation] of ops.entries()) {
      const samples = fc.sample(requestOf(operation, scenery), { numRuns: perOperation, seed: seed + index });
      for (const { caller, request } of samples) await probe(app, client, report, operation, caller, request);
    }
  } finally {
    await client.end();
  }
  return report;
}

/** One request shape the schemas do not describe: a raw body (and its content type), a query string, or headers. */
export interface Shape {
  name: string;
  body?: string;
  contentType?: string;
  query?: string;
  headers?: Record<string, string>;
}

const DEEP = 100_000;
/** The shapes a hostile or broken client sends, whatever the operation expects. */
export const SHAPES: Shape[] = [
  { name: `arrays nested ${DEEP} deep`, body: `{"name":${'['.repeat(DEEP)}1${']'.repeat(DEEP)}}` },
  { name: `objects nested ${DEEP} deep`, body: `${'{"a":'.repeat(DEEP)}1${'}'.repeat(DEEP)}` },
  { name: '60,000 keys', body: `{${Array.from({ length: 60_000 }, (_, i) => `"k${i}":${i}`).join(',')}}` },
  { name: `an array of ${DEEP} items`, body: `{"name":[${Array.from({ length: DEEP }, () => '0').join(',')}]}` },
  { name: 'duplicate keys', body: '{"name":"first","name":"second","email":"a@example.com","email":"not an email"}' },
  { name: '__proto__ key', body: '{"__proto__":{"isSuperuser":true,"role":"owner"},"name":"proto"}' },
  { name: 'constructor.prototype keys', body: '{"constructor":{"prototype":{"polluted":true}},"name":"ctor"}' },
  { name: 'prototype key', body: '{"prototype":{"polluted":true},"name":"proto2"}' },
  { name: 'a number beyond 2^53', body: '{"name":9007199254740993,"limit":9007199254740993,"position":9007199254740993}' },
  { name: 'a number 1e400', body: '{"name":1e400,"probability":-1e400}' },
  { name: 'a lone surrogate', body: '{"name":"\\ud800","email":"\\udc00@example.com"}' },
  { name: 'non-characters', body: '{"name":"\\ufffe\\uffff","first_name":"\\ud83f\\udffe"}' },
  { name: 'JSON sent as text/plain', body: '{"name":"plain"}', contentType: 'text/plain' },
  { name: 'JSON sent as a form', body: '{"name":"form"}', contentType: 'application/x-www-form-urlencoded' },
  { name: 'a form body', body: 'name=form&email=a%40example.com', contentType: 'application/x-www-form-urlencoded' },
  { name: 'JSON sent as multipart', body: '{"name":"multi"}', contentType: 'multipart/form-data; boundary=x' },
  { name: 'an empty JSON body', body: '' },
  { name: 'a truncated JSON body', body: '{"name":"trunc' },
  { name: 'repeated query parameters', query: 'limit=1&limit=2&cursor=a&cursor=b&search=x&search=y' },
  { name: 'array-shaped query parameters', query: 'limit[]=1&search[a]=b&cursor[0]=c&lifecycle_stage[]=lead' },
  { name: 'a very long query string', query: `search=${'a'.repeat(8_000)}` },
  { name: 'very long headers', headers: { 'x-padding': 'p'.repeat(15_000), 'idempotency-key': 'k'.repeat(5_000) } },
];

/** The request that sends `shape` to `operation` at `url` (its path values filled in) as `caller`. */
export const shapeRequest = (operation: Operation, url: string, caller: Caller, shape: Shape): InjectOptions => ({
  method: operation.method as InjectOptions['method'],
  url: shape.query ? `${url}?${shape.query}` : url,
  headers: {
    ...(caller.authorization ? { authorization: caller.authorization } : {}),
    ...(shape.body !== undefined ? { 'content-type': shape.contentType ?? 'application/json' } : {}),
    ...shape.headers,
  },
  ...(shape.body !== undefined ? { payload: shape.body } : {}),
});

/** Sends every shape to every operation (path values from the scenery's first choice) as `caller`. */
export async function fuzzShapes(
  app: App,
  databaseUrl: string,
  scenery: Scenery,
  caller: Caller,
): Promise<FuzzReport & { shapes: number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const report: FuzzReport = { requests: 0, counts: new Map(), findings: [] };
  try {
    for (const operation of operations()) {
      let url = operation.path;
      for (const p of operation.params.filter((param) => param.in === 'path')) {
        url = url.replace(`{${p.name}}`, encodePathValue(scenery.pathValues[p.name]?.[0] ?? 'x'));
      }
      for (const shape of SHAPES) {
        const request = shapeRequest(operation, url, caller, shape);
        await probe(app, client, report, operation, caller, request, `${operation.id}`);
      }
    }
  } finally {
    await client.end();
  }
  return { ...report, shapes: SHAPES.length };
}

/** "operationId  status×count …" lines, for the test's comments and `make fuzz`. */
export function formatCounts(report: FuzzReport): string[] {
  return [...report.counts].map(
    ([id, counts]) =>
      `${id.padEnd(36)} ${[...counts]
        .sort(([a], [b]) => a - b)
        .map(([status, n]) => `${status}×${n}`)
        .join('  ')}`,
  );
}
