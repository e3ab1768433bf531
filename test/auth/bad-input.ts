// Shared assertion for the account and token tests: an endpoint answers 400 problem+json to every kind of bad body.
import type { Test } from 'tap';
import type { App } from '../../src/app.js';
import { json } from '../helpers/app.js';

export interface Endpoint {
  method: 'POST' | 'PATCH';
  url: string;
  headers?: Record<string, string>;
}

/**
 * Sends malformed JSON, an unknown field, a wrong type and a 5,000-character value for each of `fields` (each time
 * on top of an otherwise valid body) and expects a 400 problem naming the field. The caller checks that nothing changed.
 */
export async function rejectsBadBodies(
  t: Test,
  app: App,
  endpoint: Endpoint,
  valid: Record<string, unknown>,
  fields: string[],
): Promise<void> {
  const send = (payload: string | Record<string, unknown>) =>
    app.inject({ ...endpoint, headers: { 'content-type': 'application/json', ...endpoint.headers }, payload });
  const expect400 = async (label: string, payload: string | Record<string, unknown>, code: string, field?: string) => {
    const res = await send(payload);
    t.equal(res.statusCode, 400, `${label}: 400`);
    t.match(res.headers['content-type'], /^application\/problem\+json/, `${label}: problem+json`);
    const body = json(res);
    t.equal(body.code, code, `${label}: code`);
    if (field) t.ok(body.errors?.[field], `${label}: errors.${field}`);
  };
  await expect400('malformed JSON', '{"oops": ', 'malformed_json');
  await expect400('unknown field', { ...valid, is_superuser: true }, 'validation_failed', 'is_superuser');
  for (const field of fields) {
    await expect400(`${field} of a wrong type`, { ...valid, [field]: 12345 }, 'validation_failed', field);
    await expect400(`${field} too long`, { ...valid, [field]: 'x'.repeat(5000) }, 'validation_failed', field);
  }
}
