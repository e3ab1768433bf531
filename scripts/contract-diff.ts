// The breaking changes between two versions of the OpenAPI document, and the check that every one since the committed
// baseline (openapi/baseline.json) is declared in openapi/CHANGELOG.md. `make contract-diff FROM=<git ref>` lists them.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { projectRoot } from '../src/lib/project-root.js';

export const BASELINE_FILE = path.join(projectRoot, 'openapi', 'baseline.json');
export const CHANGELOG_FILE = path.join(projectRoot, 'openapi', 'CHANGELOG.md');

type Schema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  [key: string]: unknown;
};
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}
export interface OpenApiDocument {
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

/**
 * What counts as breaking, one kind per rule. A change is printed `<kind> <where>` (then `: <detail>`); the changelog
 * declares it by that `<kind> <where>`.
 */
export const BREAKING_KINDS = {
  'operation-removed': 'An operation (method and path) is gone.',
  'response-removed': 'A success response status of an operation is gone.',
  'parameter-removed': 'A path, query or header parameter is gone.',
  'component-removed': 'A named schema is gone (and no new one has its shape).',
  'component-renamed': 'A named schema is gone and a new one has its shape: generated type names change.',
  'field-removed': 'A property of a request or response schema is gone.',
  'enum-value-removed': 'A value of an enum is gone.',
  'type-changed': 'A schema has another type, refers to another component, or accepts (request) or answers (response) null differently.',
  'required-added': 'A request field or parameter that was optional (or new) is required.',
} as const;
export type BreakingKind = keyof typeof BREAKING_KINDS;

export interface BreakingChange {
  kind: BreakingKind;
  where: string;
  detail?: string;
}

export const changeKey = (change: BreakingChange) => `${change.kind} ${change.where}`;
export const changeLine = (change: BreakingChange) => `${changeKey(change)}${change.detail ? `: ${change.detail}` : ''}`;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const COMPONENT_REF = '#/components/schemas/';
const refName = (ref: string) => (ref.startsWith(COMPONENT_REF) ? ref.slice(COMPONENT_REF.length) : ref);

/** A request schema breaks senders; a response schema breaks readers. */
type Direction = 'request' | 'response';

/** A nullable union (`anyOf: [X, {type: null}]`) as X plus a flag, so that nullability is compared on its own. */
function unwrapNullable(schema: Schema): { schema: Schema; nullable: boolean } {
  const branches = schema.anyOf;
  if (branches?.length === 2) {
    const other = branches.find((branch) => branch.type !== 'null');
    if (other && branches.some((branch) => branch.type === 'null')) return { schema: other, nullable: true };
  }
  return { schema, nullable: schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null')) };
}

/** A union of one-value schemas (`anyOf: [{const: a}, {enum: [b]}]`) as the enum of those values it means. */
function asEnum(schema: Schema): Schema {
  const branches = schema.anyOf ?? schema.oneOf;
  const values = branches?.map((branch) => (branch.const !== undefined ? [branch.const] : branch.enum?.length === 1 ? branch.enum : []));
  if (!branches?.length || !values?.every((value) => value.length === 1)) return schema;
  const { anyOf: _anyOf, oneOf: _oneOf, ...rest } = schema;
  return { ...rest, type: branches[0]?.type, enum: values.flat() };
}

const typesOf = (schema: Schema) =>
  (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []).filter((type) => type !== 'null').sort();

/** Components reachable from the request side (bodies, parameters) and from the response side of a document. */
function reachability(document: OpenApiDocument): Record<Direction, Set<string>> {
  const components = document.components?.schemas ?? {};
  const reach = { request: new Set<string>(), response: new Set<string>() };
  const visit = (node: unknown, into: Set<string>) => {
    if (Array.isArray(node)) for (const child of node) visit(child, into);
    else if (node !== null && typeof node === 'object') {
      const ref = (node as Schema).$ref;
      if (typeof ref === 'string') {
        const name = refName(ref);
        if (!into.has(name)) {
          into.add(name);
          visit(components[name], into);
        }
      }
      for (const child of Object.values(node)) visit(child, into);
    }
  };
  for (const operation of operations(document).values()) {
    visit(operation.parameters, reach.request);
    visit(operation.requestBody, reach.request);
    visit(operation.responses, reach.response);
  }
  return reach;
}

function operations(document: OpenApiDocument): Map<string, Operation> {
  const found = new Map<string, Operation>();
  for (const [url, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (METHODS.includes(method)) found.set(`${method.toUpperCase()} ${url}`, operation);
    }
  }
  return found;
}

/** The shape of a schema without its documentation, for telling a renamed component by its shape. */
function shapeOf(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(shapeOf);
  if (node === null || typeof node !== 'object') return node;
  const ignored = new Set(['title', 'description', 'examples', 'example']);
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key]) => !ignored.has(key))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]) => [key, shapeOf(value)]),
  );
}

/** Components of `before` missing from `after` whose shape a new component of `after` has: old name → new name. */
function renamedComponents(before: OpenApiDocument, after: OpenApiDocument): Map<string, string> {
  const old = before.components?.schemas ?? {};
  const current = after.components?.schemas ?? {};
  const added = Object.keys(current).filter((name) => !(name in old));
  const renames = new Map<string, string>();
  for (const name of Object.keys(old).filter((name) => !(name in current))) {
    const shape = JSON.stringify(shapeOf(old[name]));
    const match = added.find(
      (candidate) => ![...renames.values()].includes(candidate) && JSON.stringify(shapeOf(current[candidate])) === shape,
    );
    if (match) renames.set(name, match);
  }
  return renames;
}

/** Lists the breaking changes from `before` to `after` (see BREAKING_KINDS), sorted and without repeats. */
export function breakingChanges(before: OpenApiDocument, after: OpenApiDocument): BreakingChange[] {
  const changes = new Map<string, BreakingChange>();
  const report = (kind: BreakingKind, where: string, detail?: string) => {
    const change: BreakingChange = detail ? { kind, where, detail } : { kind, where };
    changes.set(changeKey(change), change);
  };
  const oldComponents = before.components?.schemas ?? {};
  const newComponents = after.components?.schemas ?? {};
  const renames = renamedComponents(before, after);

  /**
   * Compares two schemas at `where`. Two references compare by name (components are compared once, by name, below);
   * an inline schema and a reference compare with the referred component's content, so moving a schema into a
   * component is not a change.
   */
  const compare = (a: Schema | undefined, b: Schema | undefined, where: string, directions: Direction[], seen: Set<string>) => {
    if (!a || !b) return;
    if (a.$ref && b.$ref) {
      const from = refName(a.$ref);
      const to = refName(b.$ref);
      if ((renames.get(from) ?? from) !== to) report('type-changed', where, `${from} -> ${to}`);
      return;
    }
    if (a.$ref || b.$ref) {
      const key = `${a.$ref ?? ''}|${b.$ref ?? ''}|${where}`;
      if (seen.has(key)) return;
      const next = new Set(seen).add(key);
      compare(a.$ref ? oldComponents[refName(a.$ref)] : a, b.$ref ? newComponents[refName(b.$ref)] : b, where, directions, next);
      return;
    }
    const [oldEnum, newEnum] = [asEnum(a), asEnum(b)];
    const old = unwrapNullable(oldEnum);
    const current = unwrapNullable(newEnum);
    if (directions.includes('request') && old.nullable && !current.nullable) report('type-changed', where, 'null no longer accepted');
    if (directions.includes('response') && !old.nullable && current.nullable) report('type-changed', where, 'may now be null');
    if (old.schema !== oldEnum || current.schema !== newEnum) {
      compare(old.schema, current.schema, where, directions, seen);
      return;
    }
    const oldTypes = typesOf(old.schema).join('|');
    const newTypes = typesOf(current.schema).join('|');
    if (oldTypes !== newTypes && oldTypes && newTypes) report('type-changed', where, `${oldTypes} -> ${newTypes}`);
    const oldValues = old.schema.enum ?? (old.schema.const !== undefined ? [old.schema.const] : undefined);
    const newValues = current.schema.enum ?? (current.schema.const !== undefined ? [current.schema.const] : undefined);
    if (oldValues && newValues) {
      for (const value of oldValues) if (!newValues.includes(value)) report('enum-value-removed', where, JSON.stringify(value));
    } else if (!oldValues && newValues && directions.includes('request')) {
      report('type-changed', where, `only ${newValues.map((value) => JSON.stringify(value)).join(', ')}`);
    }
    for (const [name, property] of Object.entries(old.schema.properties ?? {})) {
      const field = `${where}.${name}`;
      if (!current.schema.properties?.[name]) report('field-removed', field);
      else compare(property, current.schema.properties[name], field, directions, seen);
    }
    if (directions.includes('request')) {
      const wasRequired = new Set(old.schema.required ?? []);
      for (const name of current.schema.required ?? []) if (!wasRequired.has(name)) report('required-added', `${where}.${name}`);
    }
    compare(old.schema.items, current.schema.items, `${where}[]`, directions, seen);
    for (const keyword of ['anyOf', 'oneOf', 'allOf'] as const) {
      const oldBranches = old.schema[keyword];
      const newBranches = current.schema[keyword];
      if (!oldBranches) continue;
      if (!newBranches || newBranches.length < oldBranches.length) {
        report(
          'type-changed',
          where,
          `${keyword} of ${oldBranches.length} -> ${newBranches ? `${keyword} of ${newBranches.length}` : 'none'}`,
        );
      } else {
        for (const [index, branch] of oldBranches.entries())
          compare(branch, newBranches[index], `${where}(${keyword} ${index})`, directions, seen);
      }
    }
  };

  const newOperations = operations(after);
  for (const [name, operation] of operations(before)) {
    const current = newOperations.get(name);
    if (!current) {
      report('operation-removed', name);
      continue;
    }
    const parameters = new Map((current.parameters ?? []).map((parameter) => [`${parameter.in} ${parameter.name}`, parameter]));
    const oldParameters = new Set((operation.parameters ?? []).map((parameter) => `${parameter.in} ${parameter.name}`));
    for (const parameter of operation.parameters ?? []) {
      const key = `${parameter.in} ${parameter.name}`;
      const now = parameters.get(key);
      if (!now) report('parameter-removed', `${name} ${key}`);
      else {
        if (now.required && !parameter.required) report('required-added', `${name} ${key}`);
        compare(parameter.schema, now.schema, `${name} ${key}`, ['request'], new Set());
      }
    }
    for (const [key, parameter] of parameters)
      if (parameter.required && !oldParameters.has(key)) report('required-added', `${name} ${key}`);
    const oldBody = operation.requestBody;
    const newBody = current.requestBody;
    if (newBody?.required && !oldBody?.required) report('required-added', `${name} request body`);
    for (const [type, content] of Object.entries(oldBody?.content ?? {})) {
      if (!newBody?.content?.[type]) report('type-changed', `${name} request body`, `${type} no longer accepted`);
      else compare(content.schema, newBody.content[type].schema, `${name} request`, ['request'], new Set());
    }
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      if (!/^2\d\d$/.test(status)) continue;
      const now = current.responses?.[status];
      if (!now) {
        report('response-removed', `${name} ${status}`);
        continue;
      }
      for (const [type, content] of Object.entries(response.content ?? {})) {
        if (!now.content?.[type]) report('type-changed', `${name} ${status}`, `${type} no longer answered`);
        else compare(content.schema, now.content[type].schema, `${name} ${status}`, ['response'], new Set());
      }
    }
  }

  const reach = reachability(before);
  for (const [name, schema] of Object.entries(oldComponents)) {
    const renamed = renames.get(name);
    if (renamed) report('component-renamed', name, `now ${renamed}`);
    else if (!newComponents[name]) report('component-removed', name);
    else {
      const directions = (['request', 'response'] as const).filter((direction) => reach[direction].has(name));
      compare(schema, newComponents[name], name, directions.length ? directions : ['request', 'response'], new Set());
    }
  }
  return [...changes.values()].sort((x, y) => changeKey(x).localeCompare(changeKey(y)));
}

/**
 * The changes the changelog declares as not yet released: under `## Unreleased`, each a line
 * `` - breaking: `<kind> <where>` `` followed by why.
 */
export function declaredChanges(changelog: string): Set<string> {
  const section = /^## Unreleased\s*$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(changelog)?.[1] ?? '';
  return new Set([...section.matchAll(/^- breaking: `([^`]+)`/gm)].map((match) => match[1]!));
}

/** The breaking changes from the baseline to `current` that the changelog does not declare. */
export function undeclaredChanges(baseline: OpenApiDocument, current: OpenApiDocument, changelog: string): BreakingChange[] {
  const declared = declaredChanges(changelog);
  return breakingChanges(baseline, current).filter((change) => !declared.has(changeKey(change)));
}

const run = promisify(execFile);

/** The document at a git ref (`openapi/openapi.json` of that commit). */
async function documentAt(ref: string): Promise<OpenApiDocument> {
  const { stdout } = await run('git', ['show', `${ref}:openapi/openapi.json`], { cwd: projectRoot, maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as OpenApiDocument;
}

/**
 * `contract-diff <from-ref> [<to-ref>]`: the breaking changes between two versions (default to: the working copy's
 * openapi/openapi.json), one line each, as the changelog declares them. Exit code 0: it lists, it does not judge.
 */
export async function contractDiffCli(args: string[], output: Pick<Console, 'log' | 'error'> = console): Promise<number> {
  const [from, to] = args;
  if (!from) {
    output.error('usage: make contract-diff FROM=<git ref> [TO=<git ref>]');
    return 2;
  }
  const before = await documentAt(from);
  const after = to
    ? await documentAt(to)
    : (JSON.parse(await readFile(path.join(projectRoot, 'openapi', 'openapi.json'), 'utf8')) as OpenApiDocument);
  const changes = breakingChanges(before, after);
  output.log(`${changes.length} breaking change(s) from ${from} to ${to ?? 'the working copy'}${changes.length ? ':' : '.'}`);
  for (const change of changes) output.log(`- breaking: \`${changeKey(change)}\`${change.detail ? ` (${change.detail})` : ''}`);
  return 0;
}

if (process.argv[1] && pathToFileURL(path.resolve(process.argv[1])).href === import.meta.url) {
  process.exitCode = await contractDiffCli(process.argv.slice(2));
}
