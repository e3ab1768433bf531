// A workspace's automation rules in the console: the list (with delete) and one rule's edit form.
import { html } from '../html.js';
import type { ConsoleAutomationService } from '../services/automations.js';
import { TRIGGERS } from '../../lib/crm-events.js';
import { layout, type Viewer } from './layout.js';
import { dataTable, doneNotice, select, yesNo } from './widgets.js';

type RuleList = NonNullable<Awaited<ReturnType<ConsoleAutomationService['list']>>>;
type RuleDetail = NonNullable<Awaited<ReturnType<ConsoleAutomationService['get']>>>;
type Rule = RuleList['rules'][number];

const ruleBase = (organizationId: string, rule: Rule) => `/admin/organizations/${organizationId}/automations/${rule.id}/`;

/** The delete button: carries the rule's version, so a rule changed since the page was read is not deleted blindly. */
const deleteButton = (organizationId: string, rule: Rule, csrf: string) =>
  html`<form method="post" action="${ruleBase(organizationId, rule)}delete/"><input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="version" value="${rule.updated_at}"><button type="submit">Delete</button></form>`;

export function automationsPage(user: Viewer, notice: string, { id, name, rules, more }: RuleList): string {
  return layout(
    { title: `Automations of ${name}`, user },
    html`${doneNotice(notice)}
<p><a href="/admin/organizations/${id}/">Back to the workspace</a></p>
${dataTable(['Name', 'Trigger', 'Action', 'Active', 'Updated', 'Actions'], rules, (rule) => [
  rule.name,
  rule.trigger,
  rule.action_type,
  yesNo(rule.is_active),
  rule.updated_at,
  html`<a href="${ruleBase(id, rule)}">Edit</a> ${deleteButton(id, rule, user.csrf)}`,
])}
${more ? html`<p>Only the newest rules are shown here; the API lists them all.</p>` : ''}`,
  );
}

/** A webhook rule's URL (its secret is kept); a send_email rule's settings are shown, and edited through the API. */
function actionFields(rule: Rule) {
  const config = rule.action_config;
  if ('url' in config) {
    return html`<p><label for="url">Webhook URL</label> <input id="url" name="url" type="url" required maxlength="2048" value="${config.url}">
(its signing secret is kept)</p>`;
  }
  return html`<p>Sends email to ${config.to.join(', ')}, subject <q>${config.subject}</q> (changed through the API).</p>`;
}

/** The rule's condition as indented JSON for the form; empty without one. */
const conditionText = (rule: Rule) =>
  rule.condition === null || rule.condition === undefined ? '' : JSON.stringify(rule.condition, null, 2);

export function automationPage(user: Viewer, { id, name, rule }: RuleDetail): string {
  return layout(
    { title: `Automation ${rule.name} (${name})`, user },
    html`<p><a href="/admin/organizations/${id}/automations/">Back to the automations</a></p>
<form method="post" action="${ruleBase(id, rule)}"><input type="hidden" name="_csrf" value="${user.csrf}">
<input type="hidden" name="version" value="${rule.updated_at}">
<p><label for="name">Name</label> <input id="name" name="name" required maxlength="200" value="${rule.name}"></p>
<p>${select(
      'trigger',
      'Trigger',
      rule.trigger,
      TRIGGERS.map((t): [string, string] => [t, t]),
    )}</p>
<p><label for="is_active">Active</label> <input id="is_active" name="is_active" type="checkbox" value="true"${rule.is_active ? html` checked` : ''}></p>
<p><label for="condition">Condition</label> (a query filter as JSON, e.g. <code>{"field": "lifecycle_stage", "op": "eq", "value": "customer"}</code>;
empty: every event)<br><textarea id="condition" name="condition" rows="6" cols="80" maxlength="10000">${conditionText(rule)}</textarea></p>
${actionFields(rule)}
<button type="submit">Save</button></form>
${deleteButton(id, rule, user.csrf)}`,
  );
}
