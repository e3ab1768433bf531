// Outside production, fills in the secrets a developer need not set, generated once into DATA_DIR so restarts keep them.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadBootstrapConfig } from './config.js';

type Environment = Record<string, string | undefined>;

/** The secret kept in `file`, written with a new random value (owner-only) the first time. */
function keptSecret(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(path.dirname(file), { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  writeFileSync(file, secret, { mode: 0o600 });
  // The mode of writeFileSync is filtered by the umask; the file holds a signing key.
  chmodSync(file, 0o600);
  return secret;
}

/**
 * `env` with JWT_SECRET taken from DATA_DIR/jwt-secret (generated on first use) when it is unset outside production,
 * so that sessions survive a restart. server.ts calls it before loadConfig, which itself reads and writes no file;
 * in production nothing is generated and loadConfig requires a real secret. A new object: `env` is left as it was.
 */
export function ensureDevelopmentSecrets(env: Environment): Environment {
  if (env.JWT_SECRET) return env;
  const { nodeEnv, dataDir } = loadBootstrapConfig(env);
  if (nodeEnv === 'production') return env;
  return { ...env, JWT_SECRET: keptSecret(path.join(dataDir, 'jwt-secret')) };
}
