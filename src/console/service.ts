// The console's services, one per area, built once in the composition root: the console's pages reach data only here
// and through the API's own services.
import type pg from 'pg';
import type { Db } from '../db/client.js';
import type { ApiKeyService } from '../modules/api-keys/service.js';
import type { InvitationService } from '../modules/invitations/service.js';
import type { AutomationService } from '../modules/automations/service.js';
import { createConsoleAuditService } from './services/audit.js';
import { createConsoleAutomationService } from './services/automations.js';
import { createConsoleRunService } from './services/automation-runs.js';
import { createConsoleDashboardService } from './services/dashboard.js';
import { createConsoleInvitationService } from './services/invitations.js';
import { createConsoleOutboxService } from './services/outbox.js';
import { createConsoleSignInService } from './services/sign-in.js';
import { createConsoleUserService } from './services/users.js';
import { createConsoleWorkspaceService } from './services/workspaces.js';

export interface ConsoleDeps {
  db: Db;
  pool: pg.Pool;
  /** The console session's timeouts (ADMIN_SESSION_IDLE_SECONDS, ADMIN_SESSION_MAX_SECONDS). */
  session: { idleSeconds: number; maxSeconds: number };
  apiKeys: ApiKeyService;
  invitations: InvitationService;
  automations: AutomationService;
}

export function createConsoleService(deps: ConsoleDeps) {
  const { db, pool, session, apiKeys, invitations, automations } = deps;
  return {
    signIn: createConsoleSignInService({ db, ...session }),
    dashboard: createConsoleDashboardService({ db }),
    users: createConsoleUserService({ db }),
    workspaces: createConsoleWorkspaceService({ db, pool, apiKeys }),
    invitations: createConsoleInvitationService({ db, pool, invitations }),
    outbox: createConsoleOutboxService({ db }),
    runs: createConsoleRunService({ db }),
    automations: createConsoleAutomationService({ db, pool, automations }),
    audit: createConsoleAuditService({ db }),
  };
}
