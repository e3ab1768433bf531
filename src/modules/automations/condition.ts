// A rule's condition: a query-language filter checked against its trigger's record type when saved, and evaluated by
// the query language's own SQL compilation on the event's record when a run starts.
import type { Prisma } from '../../generated/prisma/client.js';
import type { CrmEventName } from '../../lib/crm-events.js';
import { validationFailed, type FieldErrors } from '../../lib/problem.js';
import { compileFilter } from '../../records/filter/compile.js';
import { fieldResolver, type QueryDefinition } from '../../records/filter/resolve.js';
import { validateFilter, type FilterNode } from '../../records/filter/validate.js';
import { companyRecord } from '../companies/record.js';
import { contactRecord } from '../contacts/record.js';
import { dealRecord } from '../deals/record.js';
import { taskRecord } from '../tasks/record.js';

/** The record type an event's `data` is: its table (whose row type the snapshot is read as) and its query fields. */
interface ConditionTarget {
  table: string;
  query: QueryDefinition;
}

const target = (type: { table: { table: string }; query?: QueryDefinition }): ConditionTarget | undefined =>
  type.query && { table: type.table.table, query: type.query };

/**
 * The record type each trigger's `data` is, when the query language covers it. `import.finished` carries an import
 * and `note.created` a note, which no filter describes: a condition on them is refused.
 */
const TARGETS: Readonly<Record<CrmEventName, ConditionTarget | undefined>> = {
  'company.created': target(companyRecord),
  'company.updated': target(companyRecord),
  'company.deleted': target(companyRecord),
  'contact.created': target(contactRecord),
  'contact.updated': target(contactRecord),
  'contact.deleted': target(contactRecord),
  'deal.stage_changed': target(dealRecord),
  'task.completed': target(taskRecord),
  'import.finished': undefined,
  'note.created': undefined,
};

/** The triggers a condition may go with (the OpenAPI description lists them). */
export const CONDITION_TRIGGERS = (Object.keys(TARGETS) as CrmEventName[]).filter((name) => TARGETS[name] !== undefined);

/** The first few problems in one line, so that a console page or a log says what is wrong without the `errors` map. */
const summary = (errors: FieldErrors) =>
  Object.entries(errors)
    .slice(0, 3)
    .map(([path, messages]) => `${path}: ${messages.join(' ')}`)
    .join('; ');

/** The typed tree of `condition` for `trigger`'s record type, or undefined when the trigger has none. */
function checked(trigger: CrmEventName, condition: unknown): { node?: FilterNode; errors: FieldErrors } {
  const found = TARGETS[trigger];
  if (!found) return { errors: { condition: [`The ${trigger} event has no record to test: its rules take no condition.`] } };
  return validateFilter(condition, fieldResolver(found.table, found.query), 'condition');
}

/**
 * Checks a rule's condition (null or absent: none) for its trigger: 400 with the path of each problem
 * (`condition.and.0.field`), as a query reports `filter.…`. Returns the JSON to store.
 */
export function checkCondition(trigger: CrmEventName, condition: unknown): Prisma.InputJsonValue | null {
  if (condition === null || condition === undefined) return null;
  const { errors } = checked(trigger, condition);
  if (Object.keys(errors).length > 0) {
    throw validationFailed(errors, `The condition is not a filter of the ${trigger} record: ${summary(errors)}`);
  }
  return condition as Prisma.InputJsonValue;
}

/** Runs one raw statement with its parameters: the run's tenant-scoped client (`$queryRawUnsafe`). */
export type RawReader = { $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T> };

/**
 * Whether `condition` holds on `data`, the record of the event as its payload carries it (after the change; as it
 * was, for a deletion). The snapshot is read as a row of the record's table (`jsonb_populate_record`: API field
 * names are its columns) and the query language's compiled filter runs over it, so a condition means exactly what
 * the same query filter means; `company.<field>` reads the linked company as it is now. Returns the reason when it
 * does not hold, or when it no longer applies (the rule's trigger changed after the run was queued).
 */
export async function conditionHolds(
  db: RawReader,
  event: { organizationId: string; name: CrmEventName; data: Record<string, unknown> },
  condition: unknown,
): Promise<{ holds: true } | { holds: false; reason: string }> {
  const { node } = checked(event.name, condition);
  const found = TARGETS[event.name];
  if (!node || !found) {
    return {
      holds: false,
      reason: `The rule's condition does not apply to a ${event.name} event (the rule changed after the run was queued).`,
    };
  }
  const values: unknown[] = [event.organizationId];
  const parameter = (value: unknown, type: string) => `$${values.push(value)}::${type}`;
  const where = compileFilter(node)(parameter);
  // Only the fields a filter can name: another key of the payload (a name beside an id) is no column to populate.
  const columns = [...Object.keys(found.query.fields), ...(found.query.company ? [found.query.company.column] : [])];
  const fields = Object.fromEntries(columns.filter((name) => Object.hasOwn(event.data, name)).map((name) => [name, event.data[name]]));
  const snapshot = parameter(JSON.stringify({ ...fields, organization_id: event.organizationId }), 'jsonb');
  // The table's name as the alias: the compiled filter names its columns `<table>.<field>`.
  const sql =
    `SELECT EXISTS (SELECT 1 FROM jsonb_populate_record(NULL::"${found.table}", ${snapshot}) AS "${found.table}" ` +
    `WHERE "${found.table}".organization_id = $1::uuid AND (${where})) AS holds`;
  const [row] = await db.$queryRawUnsafe<{ holds: boolean }[]>(sql, ...values);
  return row?.holds ? { holds: true } : { holds: false, reason: "The rule's condition did not hold on the event's record." };
}
