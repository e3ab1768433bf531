// The signed-in caller as every layer sees it, and the checks on it that are not tied to HTTP.
import { forbidden } from './problem.js';

export interface CurrentUser {
  id: string;
  username: string;
  email: string;
  isSuperuser: boolean;
  tokenVersion: number;
}

/**
 * Who acts on workspace records: the signed-in user, or a workspace API key (which is no user, and never stands for the
 * user who created it). Recorded on what it makes (an import's creator, a task's completion).
 */
export type Actor = { userId: string; apiKeyId: null } | { userId: null; apiKeyId: string };

/** The verified claims of an access token: the user, the session (refresh family) and the user's token version. */
export interface AccessClaims {
  sub: string;
  sid: string;
  ver: number;
}

/** 403 unless the user is an installation administrator; `action` completes "Only an installation administrator can …". */
export function assertInstallationAdmin(user: CurrentUser, action: string): void {
  if (!user.isSuperuser) throw forbidden('installation_admin_required', `Only an installation administrator can ${action}.`);
}
