// The events a CRM write emits: what automation rules trigger on and what the one-statement writers queue runs for.

export type CrmEventName =
  | 'company.created'
  | 'company.updated'
  | 'contact.created'
  | 'contact.updated'
  | 'import.finished'
  | 'deal.stage_changed'
  | 'task.completed';
