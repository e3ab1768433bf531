// The pages of a workspace's automation rules: the list, one rule's edit form, and its change and delete actions.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AutomationUpdate } from '../../modules/automations/schemas.js';
import type { ExpectedVersions } from '../../lib/etag.js';
import { TRIGGERS } from '../../lib/crm-events.js';
import { validationFailed } from '../../lib/problem.js';
import { auditOf, field, idParam, notFound, notice, redirectDone, sendHtml, viewerOf } from '../request.js';
import { automationPage, automationsPage } from '../views/automations.js';

/** The version the form was read at (its hidden `version`): a rule changed since is refused (412), as If-Match is. */
function formVersion(request: FastifyRequest): ExpectedVersions {
  const version = Date.parse(field(request.body, 'version'));
  return Number.isNaN(version) ? undefined : [new Date(version)];
}

/** The form's condition as JSON: empty removes it (null); text that is no JSON is refused before the service checks the tree. */
function formCondition(text: string): unknown {
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : 'unreadable';
    throw validationFailed({ condition: ['Not valid JSON.'] }, `The condition is not valid JSON (${reason}). Nothing was changed.`);
  }
}

/**
 * The edit form as a PATCH body: name, trigger, active, condition (JSON text), and a webhook rule's URL (its secret
 * kept). A send_email rule's recipients and text are edited through the API, whose schema checks them.
 */
function formUpdate(request: FastifyRequest, actionType: string): AutomationUpdate {
  const body = request.body;
  const trigger = TRIGGERS.find((name) => name === field(body, 'trigger'));
  if (!trigger) throw validationFailed({ trigger: ['Choose one of the triggers.'] });
  const name = field(body, 'name').trim();
  if (name.length === 0 || name.length > 200) throw validationFailed({ name: ['A name of 1 to 200 characters.'] });
  const update: AutomationUpdate = {
    name,
    trigger,
    is_active: field(body, 'is_active') === 'true',
    condition: formCondition(field(body, 'condition')),
  };
  return actionType === 'webhook' ? { ...update, action_config: { url: field(body, 'url').slice(0, 2048) } } : update;
}

export default async function automationPages(app: FastifyInstance) {
  const { console } = app.services;
  const listPath = (id: string) => `/admin/organizations/${id}/automations/`;

  app.get('/organizations/:id/automations/', async (request, reply) => {
    const rules = await console.automations.list(idParam(request));
    if (!rules) throw notFound('No such workspace.');
    return sendHtml(reply, automationsPage(viewerOf(request), notice(request), rules));
  });

  app.get('/organizations/:id/automations/:automation_id/', async (request, reply) => {
    const rule = await console.automations.get(idParam(request), idParam(request, 'automation_id'));
    if (!rule) throw notFound('No such workspace.');
    return sendHtml(reply, automationPage(viewerOf(request), rule));
  });

  app.post('/organizations/:id/automations/:automation_id/', async (request, reply) => {
    const id = idParam(request);
    const ruleId = idParam(request, 'automation_id');
    const current = await console.automations.get(id, ruleId);
    if (!current) throw notFound('No such workspace.');
    const input = formUpdate(request, current.rule.action_type);
    await console.automations.update(id, ruleId, input, auditOf(request), formVersion(request));
    return redirectDone(reply, listPath(id), 'Automation saved.');
  });

  app.post('/organizations/:id/automations/:automation_id/delete/', async (request, reply) => {
    const id = idParam(request);
    if (!(await console.automations.delete(id, idParam(request, 'automation_id'), auditOf(request), formVersion(request)))) {
      throw notFound('No such workspace.');
    }
    return redirectDone(reply, listPath(id), 'Automation deleted; its runs stay listed.');
  });
}
