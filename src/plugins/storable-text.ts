// Refuses, for every route at once, request input that is nested too deeply or holds text PostgreSQL cannot store
// (NUL characters, unpaired UTF-16 surrogates).
import fp from 'fastify-plugin';
import { validationFailed, type FieldErrors } from '../lib/problem.js';

const MESSAGE = 'Must not contain NUL characters or unpaired surrogates.';

/**
 * Objects and arrays nested deeper than this are refused with 400 before anything else reads the body: no API body
 * needs more than a few levels, and every later step (validation, hashing, logging) may recurse over it.
 */
export const MAX_DEPTH = 32;

/** PostgreSQL's text types reject U+0000, and a lone surrogate has no UTF-8 form: both would fail deep in a query. */
const storable = (text: string) => !text.includes('\u0000') && text.isWellFormed();

/**
 * Collects the dotted paths of every unstorable string (keys included) below `value`, iteratively (a body nested
 * 100,000 levels deep must not exhaust the stack); returns false as soon as a value is nested deeper than MAX_DEPTH.
 */
function collectUnstorable(root: unknown, found: string[]): boolean {
  const pending: Array<{ value: unknown; path: string; depth: number }> = [{ value: root, path: '', depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, path, depth } = next;
    if (typeof value === 'string') {
      if (!storable(value)) found.push(path);
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_DEPTH) return false;
    const entries = Array.isArray(value) ? value.map((item, index) => [String(index), item] as const) : Object.entries(value);
    for (const [key, item] of entries) {
      const itemPath = path ? `${path}.${key}` : key;
      if (!storable(key)) found.push(itemPath);
      else pending.push({ value: item, path: itemPath, depth: depth + 1 });
    }
  }
  return true;
}

export default fp(
  async (app) => {
    // preValidation: after parsing (so JSON escapes such as \u0000 are decoded), before the schema and any handler.
    app.addHook('preValidation', async (request) => {
      const found: string[] = [];
      for (const [name, part] of [
        ['params', request.params],
        ['query', request.query],
        ['body', request.body],
      ] as const) {
        if (!collectUnstorable(part, found)) {
          throw validationFailed({ [name]: [`Nested more than ${MAX_DEPTH} levels deep.`] }, 'The request is nested too deeply.');
        }
      }
      if (found.length === 0) return;
      const errors: FieldErrors = Object.fromEntries(new Map(found.map((field) => [field || 'body', [MESSAGE]])));
      throw validationFailed(errors, 'The request contains text that cannot be stored.');
    });
  },
  { name: 'storable-text', dependencies: ['errors'] },
);
