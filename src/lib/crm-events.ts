// The events a CRM write emits: what automation rules trigger on and what the one-statement writers queue runs for.

export const TRIGGERS = [
  'company.created',
  'company.updated',
  'company.deleted',
  'contact.created',
  'contact.updated',
  'contact.deleted',
  'import.finished',
  'deal.stage_changed',
  'task.completed',
  'note.created',
] as const;

export type CrmEventName = (typeof TRIGGERS)[number];
