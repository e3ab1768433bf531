// The per-organization roles and what each may do (the API contract's capability table).
import type { MembershipRole } from '../generated/prisma/enums.js';

export const CAPABILITIES = [
  'VIEW_CRM',
  'MANAGE_CRM',
  'MANAGE_AUTOMATIONS',
  'MANAGE_MEMBERS',
  'MANAGE_SETTINGS',
  'DELETE_ORGANIZATION',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

const ROLE_CAPABILITIES: Record<MembershipRole, ReadonlySet<Capability>> = {
  owner: new Set(CAPABILITIES),
  admin: new Set<Capability>(['VIEW_CRM', 'MANAGE_CRM', 'MANAGE_AUTOMATIONS', 'MANAGE_MEMBERS', 'MANAGE_SETTINGS']),
  member: new Set<Capability>(['VIEW_CRM', 'MANAGE_CRM']),
  viewer: new Set<Capability>(['VIEW_CRM']),
};

export const roleCan = (role: MembershipRole, capability: Capability): boolean => ROLE_CAPABILITIES[role].has(capability);
