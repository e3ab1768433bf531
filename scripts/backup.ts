// `make backup`: an online, consistent physical backup of the embedded database into BACKUP_DIR (see docs/operations.md, Backups).
import { loadBootstrapConfig } from '../src/config.js';
import { takeBackup } from '../src/db/embedded-backup.js';

const { dataDir } = loadBootstrapConfig(process.env);
const backupDir = process.argv[2] ?? 'backups';
try {
  const target = await takeBackup({ dataDir, backupDir, log: (line) => console.error(line) });
  console.log(`backup written to ${target}`);
} catch (error) {
  console.error(`backup FAILED: ${(error as Error).message}`);
  process.exitCode = 1;
}
