// Typed HTTP errors (RFC 9457 problem details) that services throw and the error plugin renders.
import type { ErrorCode } from './error-codes.js';

export type FieldErrors = Record<string, string[]>;

export interface ProblemInit {
  status: number;
  code: ErrorCode;
  title: string;
  detail: string;
  errors?: FieldErrors;
  headers?: Record<string, string>;
  /** Extra members of the body (RFC 9457 extensions), e.g. the two-factor `challenge`. */
  extensions?: Record<string, string>;
}

export class ProblemError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly title: string;
  readonly detail: string;
  readonly errors: FieldErrors | undefined;
  readonly headers: Record<string, string> | undefined;
  readonly extensions: Record<string, string> | undefined;

  constructor(init: ProblemInit) {
    super(init.detail);
    this.name = 'ProblemError';
    this.status = init.status;
    this.code = init.code;
    this.title = init.title;
    this.detail = init.detail;
    this.errors = init.errors;
    this.headers = init.headers;
    this.extensions = init.extensions;
  }
}

/** 400 for a request whose fields are wrong; `errors` maps field names (dotted paths) to messages. */
export const validationFailed = (errors: FieldErrors, detail = 'Request body is invalid.') =>
  new ProblemError({ status: 400, code: 'validation_failed', title: 'Validation failed', detail, errors });

export const badRequest = (code: ErrorCode, detail: string, errors?: FieldErrors) =>
  new ProblemError({ status: 400, code, title: 'Bad request', detail, errors });

export const unauthorized = (
  code: ErrorCode = 'not_authenticated',
  detail = 'Authentication credentials were not provided or are invalid.',
) => new ProblemError({ status: 401, code, title: 'Unauthorized', detail, headers: { 'www-authenticate': 'Bearer' } });

export const forbidden = (code: ErrorCode = 'permission_denied', detail = 'You do not have permission to perform this action.') =>
  new ProblemError({ status: 403, code, title: 'Forbidden', detail });

export const notFound = (detail = 'Not found.', code: ErrorCode = 'not_found') =>
  new ProblemError({ status: 404, code, title: 'Not found', detail });

export const conflict = (code: ErrorCode, detail: string, errors?: FieldErrors) =>
  new ProblemError({ status: 409, code, title: 'Conflict', detail, errors });

export const preconditionFailed = (detail: string) =>
  new ProblemError({ status: 412, code: 'precondition_failed', title: 'Precondition failed', detail });

export const badGateway = (code: ErrorCode, detail: string) => new ProblemError({ status: 502, code, title: 'Bad gateway', detail });

export const tooManyRequests = (code: ErrorCode, detail: string, headers?: Record<string, string>) =>
  new ProblemError({ status: 429, code, title: 'Too many requests', detail, headers });

export const serviceUnavailable = (code: ErrorCode, detail: string, headers?: Record<string, string>) =>
  new ProblemError({ status: 503, code, title: 'Service unavailable', detail, headers });

/** The same answer for a workspace that does not exist, one the caller is not a member of, a pending or cancelled one and a malformed id.
 * */
export const organizationNotFound = () => notFound('Organization not found.', 'organization_not_found');
