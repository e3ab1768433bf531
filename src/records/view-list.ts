// A record list read through a saved view (`GET …/{object}/?view=<id>`): the view's filter and multi-key sort through
// the query machinery, narrowed by the list's own filters, with the list's `search` and `sort` in place of the view's.
import type { PageCondition } from '../db/page-query.js';
import type { Tenant } from '../db/tenant.js';
import type { ListOrder } from '../lib/pagination.js';
import { ProblemError, validationFailed } from '../lib/problem.js';
import type { RecordFilter } from './definition.js';
import { compileFilter } from './filter/compile.js';
import type { FieldResolver } from './filter/resolve.js';
import type { QueryPage } from './query-service.js';
import { readVisibleView, viewFields, viewNotFound, viewQuery, type ViewableRecord } from './views.js';

/**
 * The list's equality filters (`lifecycle_stage=…`, `company_id=…`) as the query's own `eq` conditions over the same
 * fields, compiled as a query's are (an enum compared as its type, which its index and statistics serve).
 */
function equalities(equals: RecordFilter['equals'], resolve: FieldResolver): PageCondition[] {
  return Object.entries(equals ?? {}).flatMap(([column, value]) => {
    if (value === undefined) return [];
    const field = resolve(column);
    if (!field) throw new Error(`the list filter ${column} is no query field`);
    return [compileFilter({ kind: 'condition', field, op: 'eq', value })];
  });
}

/** What a list request through a view gives besides the view's id: its selection, its `sort`, its page. */
export interface ViewListRequest {
  /** The list's own selection (equality filters, conditions, `search` when given, archive state). */
  filter: RecordFilter;
  /** The list's `sort` when given: it replaces the view's. */
  order?: ListOrder;
  limit: number;
  cursor?: string;
}

/**
 * One page of `type`'s records through the view `viewId`, as `viewer` (a user id; null for a workspace API key) sees
 * it: 404 for a view it cannot see or a view of another record type, 400 view_field_archived for a view naming a field
 * that no longer resolves.
 */
export async function viewListPage<Dto>(
  tenant: Tenant,
  type: ViewableRecord,
  viewer: string | null,
  viewId: string,
  request: ViewListRequest,
): Promise<QueryPage<Dto>> {
  // The fields and the view are independent reads: one round trip's wait, not two.
  const [viewed, view] = await Promise.all([viewFields(type, tenant.pages), readVisibleView(tenant.pages, viewId, viewer)]);
  const { object, engine, fields } = viewed;
  if (!view || view.object !== object) throw viewNotFound();
  const { filter, order } = request;
  let checked: Awaited<ReturnType<typeof viewQuery>>;
  try {
    checked = await viewQuery(
      view,
      {
        search: filter.search,
        sort: order && [{ field: order.sort, direction: order.descending ? 'desc' : 'asc' }],
        archived: filter.archived ?? 'active',
        limit: request.limit,
        cursor: request.cursor,
      },
      viewed,
    );
  } catch (error) {
    if (error instanceof ProblemError && error.code === 'validation_failed' && error.errors) {
      throw validationFailed(error.errors, 'The query parameters, or the view they list through, are invalid.');
    }
    throw error;
  }
  const conditions = [...equalities(filter.equals, engine.resolve), ...(filter.conditions ?? [])];
  const page = await engine.page(tenant.pages, checked, fields.resolve, conditions);
  return page as QueryPage<Dto>;
}
