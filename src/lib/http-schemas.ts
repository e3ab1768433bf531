// TypeBox building blocks shared by every route schema: the Problem body, strict objects, ids, timestamps.
import { ERROR_CODES } from './error-codes.js';
import { Type, type TProperties, type TSchema, type ObjectOptions } from '@sinclair/typebox';

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'URI identifying the problem type.' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.Union(
      Object.keys(ERROR_CODES).map((code) => Type.Literal(code)),
      { description: 'Stable machine-readable code; the catalogue of every code is in `info.description`.' },
    ),
    instance: Type.Optional(
      Type.String({ description: 'The request id as `urn:request:<uuid>`, as the server logged it: quote it when reporting a problem.' }),
    ),
    errors: Type.Optional(
      Type.Record(Type.String(), Type.Array(Type.String()), {
        description: 'Validation messages per field (dotted paths for nested fields).',
      }),
    ),
  },
  {
    $id: 'Problem',
    title: 'Problem',
    description: 'RFC 9457 problem details.',
    examples: [
      {
        type: 'https://docs.example/errors/validation-failed',
        title: 'Validation failed',
        status: 400,
        detail: 'Request body is invalid.',
        code: 'validation_failed',
        errors: { name: ['This field may not be blank.'] },
      },
    ],
  },
);

/** A request body object that rejects unknown properties (the API contract: no silent ignoring). */
export const StrictObject = <T extends TProperties>(properties: T, options: ObjectOptions = {}) =>
  Type.Object(properties, { additionalProperties: false, ...options });

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Path ids are checked before they reach a query, so a malformed one is a 404 like any unknown id, never a 500. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID_PATTERN.test(value);

export const Uuid = (options: { description?: string } = {}) => Type.String({ format: 'uuid', ...options });
export const Timestamp = (options: { description?: string } = {}) => Type.String({ format: 'date-time', ...options });
export const NullableTimestamp = (options: { description?: string } = {}) => Type.Union([Timestamp(), Type.Null()], options);
export const Nullable = <T extends TSchema>(schema: T, options: { description?: string } = {}) =>
  Type.Union([schema, Type.Null()], options);
export const Email = (options: { description?: string } = {}) => Type.String({ format: 'email', maxLength: 254, ...options });

export const DetailSchema = Type.Object({ detail: Type.String() }, { $id: 'Detail', title: 'Detail' });

const problemDescriptions: Record<number, string> = {
  400: 'Bad request: malformed JSON or invalid fields.',
  401: 'Authentication missing, expired, invalid or revoked.',
  403: 'Not allowed.',
  404: 'Not found, or not accessible to the caller.',
  409: 'Conflict with the current state.',
  412: 'The record changed since the ETag given in If-Match.',
  413: 'Body larger than 1 MiB.',
  415: 'Body is not JSON.',
  429: 'Rate limited; see the Retry-After header.',
  500: 'Unexpected server error.',
  502: 'An upstream server (SMTP) failed.',
  503: 'Not ready.',
};

/** Headers of a rate-limited operation's answers (@fastify/rate-limit's names), lifted into OpenAPI by @fastify/swagger. */
export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': Type.Integer({ description: 'Requests allowed in the current window.' }),
  'X-RateLimit-Remaining': Type.Integer({ description: 'Requests left in the current window.' }),
  'X-RateLimit-Reset': Type.Integer({ description: 'Seconds until the window resets.' }),
};

export const problemResponse = (status: number) => ({
  description: problemDescriptions[status] ?? 'Error.',
  ...(status === 401
    ? { headers: { 'WWW-Authenticate': Type.Literal('Bearer', { description: 'The scheme to authenticate with (RFC 6750).' }) } }
    : {}),
  ...(status === 429
    ? { headers: { 'Retry-After': Type.Integer({ description: 'Seconds to wait before retrying.' }), ...RATE_LIMIT_HEADERS } }
    : {}),
  content: { 'application/problem+json': { schema: Type.Ref(ProblemSchema) } },
});

/**
 * The `response` map of a route: its success responses plus a problem+json response for each error status
 * it can answer. 400 and 500 are always included (any body can be malformed; any request can fail).
 */
export function responses<R extends Record<number, unknown>>(success: R, ...errorStatuses: number[]) {
  const all = new Set([400, 500, ...errorStatuses]);
  const errors = Object.fromEntries([...all].sort().map((s) => [s, problemResponse(s)]));
  return { ...success, ...errors } as R & Record<number, unknown>;
}

/** Body of a 204 response. */
export const NoContent = Type.Null({ description: 'No content.' });

export const OrganizationParamsSchema = Type.Object({
  organization_id: Type.String({ description: 'Organization UUID.' }),
});
