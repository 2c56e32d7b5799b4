import { join } from 'node:path';
import { KEY_FILE, verifyAudit } from '../audit/index.js';
import { CodexecError } from '../errors/index.js';
import { redactUrl } from '../store/index.js';
import { verifyChainsCommand } from './audit-chains.js';
import { configOrExit } from './config.js';

/**
 * `codexec audit verify`: check the audit trail in the log directory (chain, HMACs, anchor), or
 * with a postgres store every replica's chain. Exit 0 when it is intact, 1 naming the first line
 * (or day file; on postgres each chain and seq) that breaks it, 2 for a bad setting.
 */
export async function auditVerifyCommand(options: { json?: boolean }): Promise<void> {
  const config = configOrExit();
  if (config.store.kind === 'postgres') {
    try {
      await verifyChainsCommand({ ...config, store: config.store }, options);
    } catch (error) {
      // A bad key file names its setting; a database that cannot be read is no verdict either.
      const why =
        error instanceof CodexecError
          ? ''
          : `cannot read the audit chains from ${redactUrl(config.store.url)}: `;
      process.stderr.write(`codexec: ${why}${(error as Error).message}\n`);
      process.exit(2);
    }
    return;
  }
  const { logDir, home } = config;
  const report = verifyAudit(logDir, join(home, KEY_FILE));
  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else if (report.bad) {
    const { file, line, reason } = report.bad;
    process.stdout.write(
      `audit chain broken at ${line > 0 ? `${file}:${line}` : file}: ${reason}\n` +
        `(${report.entries} entries before it verified)\n`,
    );
  } else {
    const torn = report.torn.map((place) => `${place.file}:${place.line}`).join(', ');
    process.stdout.write(
      `audit chain intact: ${report.entries} entries in ${report.files} files under ${logDir}\n` +
        `last hash ${report.last_hash}\n` +
        (report.unsigned
          ? `${report.unsigned} entries unsigned (written before entries carried an hmac)\n`
          : '') +
        (report.past_anchor
          ? `${report.past_anchor} entries past the anchor (a writer's last burst)\n`
          : '') +
        (torn ? `torn lines skipped (a writer died mid-line): ${torn}\n` : ''),
    );
  }
  process.exitCode = report.ok ? 0 : 1;
}
