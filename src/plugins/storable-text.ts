// Refuses, for every route at once, request text that PostgreSQL cannot store: NUL characters and unpaired UTF-16 surrogates.
import fp from 'fastify-plugin';
import { validationFailed, type FieldErrors } from '../lib/problem.js';

const MESSAGE = 'Must not contain NUL characters or unpaired surrogates.';

/** PostgreSQL's text types reject U+0000, and a lone surrogate has no UTF-8 form: both would fail deep in a query. */
const storable = (text: string) => !text.includes('\u0000') && text.isWellFormed();

/** Collects the dotted paths of every unstorable string (keys included) below `value`. */
function unstorablePaths(value: unknown, path: string, found: string[]): void {
  if (typeof value === 'string') {
    if (!storable(value)) found.push(path);
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => {
      unstorablePaths(item, path ? `${path}.${index}` : String(index), found);
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const itemPath = path ? `${path}.${key}` : key;
      if (!storable(key)) found.push(itemPath);
      else unstorablePaths(item, itemPath, found);
    }
  }
}

export default fp(
  async (app) => {
    // preValidation: after parsing (so JSON escapes such as \u0000 are decoded), before the schema and any handler.
    app.addHook('preValidation', async (request) => {
      const found: string[] = [];
      for (const part of [request.params, request.query, request.body]) unstorablePaths(part, '', found);
      if (found.length === 0) return;
      const errors: FieldErrors = Object.fromEntries(new Map(found.map((field) => [field || 'body', [MESSAGE]])));
      throw validationFailed(errors, 'The request contains text that cannot be stored.');
    });
  },
  { name: 'storable-text', dependencies: ['errors'] },
);
