// A rule's condition: a query-language filter checked against its trigger's record type (and the workspace's custom
// fields) when saved, and evaluated by the query language's own SQL compilation on the event's record when a run starts.
import type { Prisma } from '../../generated/prisma/client.js';
import type { TenantDb } from '../../db/tenant-scope.js';
import { loadCustomFields, type CustomObject } from '../../records/custom-fields/definitions.js';
import { CUSTOM_PREFIX, withCustomFieldResolver, type QueryCustomFields } from '../../records/custom-fields/query.js';
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
  /** The record type of its custom fields (`custom.<key>`). */
  object: CustomObject;
}

const target = (type: { table: { table: string }; query?: QueryDefinition }, object: CustomObject): ConditionTarget | undefined =>
  type.query && { table: type.table.table, query: type.query, object };

/**
 * The record type each trigger's `data` is, when the query language covers it. `import.finished` carries an import
 * and `note.created` a note, which no filter describes: a condition on them is refused.
 */
const TARGETS: Readonly<Record<CrmEventName, ConditionTarget | undefined>> = {
  'company.created': target(companyRecord, 'company'),
  'company.updated': target(companyRecord, 'company'),
  'company.deleted': target(companyRecord, 'company'),
  'contact.created': target(contactRecord, 'contact'),
  'contact.updated': target(contactRecord, 'contact'),
  'contact.deleted': target(contactRecord, 'contact'),
  'deal.stage_changed': target(dealRecord, 'deal'),
  'task.completed': target(taskRecord, 'task'),
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

/**
 * The workspace's custom fields a condition on `found` may name (its own, and its company's for a linked type), read
 * only when the condition names one (`custom.` appears in it): most conditions do not, and a run reads none then.
 */
async function customFieldsOf(db: TenantDb, found: ConditionTarget, condition: unknown): Promise<QueryCustomFields> {
  if (!JSON.stringify(condition).includes(CUSTOM_PREFIX)) return { own: [] };
  const company = found.query.company;
  const [own, companyFields] = await Promise.all([
    loadCustomFields(db, found.object),
    company ? loadCustomFields(db, 'company') : Promise.resolve(undefined),
  ]);
  return { own, company: company && companyFields ? { column: company.column, fields: companyFields } : undefined };
}

/**
 * The typed tree of `condition` for `trigger`'s record type, with the workspace's active custom fields (an unknown or
 * archived `custom.<key>` is an unknown field, as in a query), or the problems; none when the trigger has no record.
 */
async function checked(db: TenantDb, trigger: CrmEventName, condition: unknown): Promise<{ node?: FilterNode; errors: FieldErrors }> {
  const found = TARGETS[trigger];
  if (!found) return { errors: { condition: [`The ${trigger} event has no record to test: its rules take no condition.`] } };
  const custom = await customFieldsOf(db, found, condition);
  const resolve = withCustomFieldResolver(fieldResolver(found.table, found.query), found.table, custom);
  return validateFilter(condition, resolve, 'condition');
}

/**
 * Checks a rule's condition (null or absent: none) for its trigger: 400 with the path of each problem
 * (`condition.and.0.field`), as a query reports `filter.…`. Returns the JSON to store.
 */
export async function checkCondition(db: TenantDb, trigger: CrmEventName, condition: unknown): Promise<Prisma.InputJsonValue | null> {
  if (condition === null || condition === undefined) return null;
  const { errors } = await checked(db, trigger, condition);
  if (Object.keys(errors).length > 0) {
    throw validationFailed(errors, `The condition is not a filter of the ${trigger} record: ${summary(errors)}`);
  }
  return condition as Prisma.InputJsonValue;
}

/**
 * Whether `condition` holds on `data`, the record of the event as its payload carries it (after the change; as it
 * was, for a deletion). The snapshot is read as a row of the record's table (`jsonb_populate_record`: API field
 * names are its columns) and the query language's compiled filter runs over it, so a condition means exactly what
 * the same query filter means; `custom.<key>` reads the snapshot's `custom_fields`, `company.<field>` the linked
 * company as it is now. Returns the reason when it does not hold, or when it no longer applies (the rule's trigger
 * changed after the run was queued, or a custom field it names was archived since).
 */
export async function conditionHolds(
  db: TenantDb,
  event: { organizationId: string; name: CrmEventName; data: Record<string, unknown> },
  condition: unknown,
): Promise<{ holds: true } | { holds: false; reason: string }> {
  const { node, errors } = await checked(db, event.name, condition);
  const found = TARGETS[event.name];
  if (!found) {
    return {
      holds: false,
      reason: `The rule's condition does not apply to a ${event.name} event (the rule changed after the run was queued).`,
    };
  }
  if (!node) return { holds: false, reason: `The rule's condition no longer fits the ${event.name} record: ${summary(errors)}` };
  const values: unknown[] = [event.organizationId];
  const parameter = (value: unknown, type: string) => `$${values.push(value)}::${type}`;
  const where = compileFilter(node)(parameter);
  // Only the fields a filter can name: another key of the payload (a name beside an id) is no column to populate.
  const columns = [...Object.keys(found.query.fields), 'custom_fields', ...(found.query.company ? [found.query.company.column] : [])];
  const fields = Object.fromEntries(columns.filter((name) => Object.hasOwn(event.data, name)).map((name) => [name, event.data[name]]));
  const snapshot = parameter(JSON.stringify({ ...fields, organization_id: event.organizationId }), 'jsonb');
  // The table's name as the alias: the compiled filter names its columns `<table>.<field>`.
  const sql =
    `SELECT EXISTS (SELECT 1 FROM jsonb_populate_record(NULL::"${found.table}", ${snapshot}) AS "${found.table}" ` +
    `WHERE "${found.table}".organization_id = $1::uuid AND (${where})) AS holds`;
  const [row] = await db.$queryRawUnsafe<{ holds: boolean }[]>(sql, ...values);
  return row?.holds ? { holds: true } : { holds: false, reason: "The rule's condition did not hold on the event's record." };
}
