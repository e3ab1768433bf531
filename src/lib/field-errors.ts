// Ajv's validation issues as the API's field errors (`{ field: [messages] }`): request bodies and imported rows alike.
import type { FieldErrors } from './problem.js';

export interface AjvIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** Turns Ajv's validation issues into `{ field: [messages] }` with dotted paths. */
export function fieldErrors(issues: AjvIssue[], context: string | undefined): FieldErrors {
  // A Map, not an object: field names come from the client, and `valueOf` or `__proto__` must stay plain keys.
  const errors = new Map<string, string[]>();
  const add = (field: string, message: string) => {
    const key = field || context || 'body';
    const list = errors.get(key) ?? [];
    errors.set(key, list);
    if (!list.includes(message)) list.push(message);
  };
  for (const issue of issues) {
    const base = (issue.instancePath ?? '').split('/').filter(Boolean).join('.');
    const join = (name: string) => (base ? `${base}.${name}` : name);
    const params = issue.params ?? {};
    switch (issue.keyword) {
      case 'required':
        add(join(String(params.missingProperty)), 'This field is required.');
        break;
      case 'additionalProperties':
        add(join(String(params.additionalProperty)), 'Unknown field.');
        break;
      case 'format':
        add(base, params.format === 'email' ? 'Enter a valid email address.' : `Must be a valid ${String(params.format)}.`);
        break;
      case 'maxLength':
        add(base, `Ensure this field has no more than ${String(params.limit)} characters.`);
        break;
      case 'minLength':
        add(
          base,
          Number(params.limit) <= 1 ? 'This field may not be blank.' : `Ensure this field has at least ${String(params.limit)} characters.`,
        );
        break;
      case 'discriminator':
        // The tag of a discriminated body (e.g. `action_type`) is missing, not a string, or names no branch.
        add(
          join(String(params.tag)),
          params.tagValue === undefined
            ? 'This field is required.'
            : params.error === 'mapping'
              ? `"${String(params.tagValue)}" is not a valid choice.`
              : 'Must be a string.',
        );
        break;
      case 'enum':
        // A named enum (StringEnum) says what the unions of literals it replaced said (their `const` message), so
        // clients see the same texts as before.
        add(base, 'Must be equal to constant.');
        break;
      case 'anyOf':
      case 'oneOf':
        // The branches' own messages are already listed; only say something when none is.
        if (!issues.some((other) => other !== issue && (other.instancePath ?? '').startsWith(issue.instancePath ?? ''))) {
          add(base, 'Invalid value.');
        }
        break;
      default:
        add(base, issue.message ? `${issue.message.charAt(0).toUpperCase() + issue.message.slice(1)}.` : 'Invalid value.');
    }
  }
  return Object.fromEntries(errors);
}
