// Response bodies and parameters of the session endpoints.
import { Type } from '@sinclair/typebox';
import { named, Nullable, Timestamp, Uuid } from '../../lib/http-schemas.js';

export const SessionSchema = Type.Object(
  {
    id: Uuid({ description: 'The session id (the access token carries it as `sid`).' }),
    created_at: Timestamp({ description: 'When the sign-in happened.' }),
    last_used_at: Timestamp({ description: 'The last sign-in or refresh of the session (access tokens in between are not counted).' }),
    user_agent: Nullable(Type.String(), { description: 'User-Agent of that last sign-in or refresh (first 512 characters).' }),
    client_ip: Nullable(Type.String(), {
      description: 'Client address of that last sign-in or refresh, as seen through the trusted proxies.',
    }),
    current: Type.Boolean({ description: 'The session of the access token making this request.' }),
  },
  { ...named('Session'), description: 'A sign-in (a refresh-token family) that is still live.' },
);

export const SessionsEndedSchema = Type.Object(
  { ended: Type.Integer({ minimum: 0, description: 'How many sessions were ended.' }) },
  named('SessionsEnded'),
);

export const SessionParamsSchema = Type.Object({ session_id: Type.String({ description: 'Session id.' }) });

/** The named components of this module, for app.addSchema (src/http/components.ts). */
export const SESSION_SCHEMAS = [SessionSchema, SessionsEndedSchema];
