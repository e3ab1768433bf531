// TypeBox building blocks shared by every route schema: named components, enums, the Problem body, strict objects, ids.
import { ERROR_CODES, type ErrorCode } from './error-codes.js';
import { Type, type TProperties, type TSchema, type TUnsafe, type ObjectOptions } from '@sinclair/typebox';

/**
 * The options that make a schema a named component: its `$id` (how routes refer to it with `Type.Ref` and the
 * name @fastify/swagger gives it under `components/schemas`) and the same `title` (what generators name the type).
 * Names are PascalCase and part of the contract: renaming one is a breaking change (openapi/CHANGELOG.md).
 */
export const named = (name: string) => ({ $id: name, title: name });

/**
 * A closed set of strings as one named component `{"type": "string", "enum": [...]}`: generated clients get one
 * enum type (not a union of one-value schemas per place it is used). Ajv validates it and TypeBox types it as the
 * union of `values`. Register it with the other components and refer to it with `Type.Ref`; `description` explains
 * the values.
 */
export const StringEnum = <const V extends readonly [string, ...string[]]>(
  values: V,
  options: { $id: string; title?: string; description: string },
) =>
  // The intersection lets the routes' type provider (TypeBox 1, which reads the JSON shape) type it too.
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values], title: options.$id, ...options }) as TUnsafe<V[number]> & {
    type: 'string';
    enum: V;
  };

/**
 * A reference to a named component (`{"$ref": "<$id>"}`), typed as the component itself: TypeBox's `Type.Ref` types it
 * for TypeBox 0.34, but the routes' type provider infers request and response types from the JSON shape and cannot
 * follow a `$ref`. Ajv and @fastify/swagger resolve it against the registered component.
 */
export function Ref<T extends TSchema>(schema: T, options: { description?: string } = {}): T {
  if (typeof schema.$id !== 'string') throw new Error(`Ref: the schema has no $id: ${JSON.stringify(schema)}`);
  return Type.Ref(schema, options) as unknown as T;
}

/** The keyword under which `DocumentedAs` keeps the schema the OpenAPI document shows (src/plugins/openapi.ts). */
export const DOCUMENTED_AS = 'x-crm-documented-as';

/**
 * A value the route passes through unchecked (its service checks it and reports each problem at its own path, as a
 * query's filter) and serializes as given, while the OpenAPI document shows `documented` (e.g. a `$ref` to a
 * component, as `#/components/schemas/<name>`): Ajv and the serializer ignore the extension keyword.
 */
export const DocumentedAs = <T>(documented: Record<string, unknown>, options: { description: string }) =>
  Type.Unsafe<T>({ ...options, [DOCUMENTED_AS]: documented });

export const ErrorCodeSchema = StringEnum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]], {
  $id: 'ErrorCode',
  description: 'Stable machine-readable code of a problem; the catalogue of every code and its meaning is in `info.description`.',
});

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'URI identifying the problem type.' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Ref(ErrorCodeSchema),
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
    ...named('Problem'),
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

export const DetailSchema = Type.Object({ detail: Type.String() }, named('Detail'));

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

/** The IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers) of the workspace and API-key request budgets. */
export const BUDGET_HEADERS = {
  'Retry-After': Type.Integer({ description: 'Seconds until the exhausted budget starts a new window.' }),
  'RateLimit-Policy': Type.String({
    description:
      'The budgets that apply, as a structured-field list: `"workspace";q=<requests>;w=<seconds>` and, for an API key, ' +
      '`"api-key";q=<requests>;w=<seconds>`.',
  }),
  RateLimit: Type.String({
    description: 'What is left of each budget: `"workspace";r=<remaining>;t=<seconds until the window resets>` (and `"api-key";…`).',
  }),
};

export const problemResponse = (status: number) => ({
  description: problemDescriptions[status] ?? 'Error.',
  ...(status === 401
    ? { headers: { 'WWW-Authenticate': Type.Literal('Bearer', { description: 'The scheme to authenticate with (RFC 6750).' }) } }
    : {}),
  ...(status === 429
    ? { headers: { 'Retry-After': Type.Integer({ description: 'Seconds to wait before retrying.' }), ...RATE_LIMIT_HEADERS } }
    : {}),
  content: { 'application/problem+json': { schema: Ref(ProblemSchema) } },
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
