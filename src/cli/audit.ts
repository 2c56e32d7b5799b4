import { verifyAudit } from '../audit/index.js';
import { configOrExit } from './config.js';

/**
 * `codexec audit verify`: check the audit chain in the log directory. Exit 0 when it is intact,
 * 1 naming the first line that breaks it.
 */
export function auditVerifyCommand(options: { json?: boolean }): void {
  const { logDir } = configOrExit();
  const report = verifyAudit(logDir);
  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else if (report.bad) {
    process.stdout.write(
      `audit chain broken at ${report.bad.file}:${report.bad.line}: ${report.bad.reason}\n` +
        `(${report.entries} entries before it verified)\n`,
    );
  } else {
    const torn = report.torn.map((place) => `${place.file}:${place.line}`).join(', ');
    process.stdout.write(
      `audit chain intact: ${report.entries} entries in ${report.files} files under ${logDir}\n` +
        `last hash ${report.last_hash}\n` +
        (torn ? `torn lines skipped (a writer died mid-line): ${torn}\n` : ''),
    );
  }
  process.exitCode = report.ok ? 0 : 1;
}
