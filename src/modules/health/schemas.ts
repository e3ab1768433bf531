// The answer of the health checks.
import { Type } from '@sinclair/typebox';
import { named } from '../../lib/http-schemas.js';

export const HealthStatusSchema = Type.Object(
  { status: Type.Literal('ok') },
  { ...named('HealthStatus'), description: 'The answer of a passing liveness or readiness check.' },
);
