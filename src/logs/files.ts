// Names of the JSONL files in the log directory. Anything else there is not ours to read or touch.

const DAILY = /^executions-(\d{4}-\d{2}-\d{2})\.jsonl$/;
const SESSION = /^session-(.+)\.jsonl$/;

export type LogFileKind = 'daily' | 'session';

export interface LogFileName {
  readonly name: string;
  readonly kind: LogFileKind;
  /** Daily files: midnight UTC of the file's date, in ms. */
  readonly dayMs?: number;
}

/** Classify a file name in the log directory; undefined for files that are not execution logs. */
export function parseLogFileName(name: string): LogFileName | undefined {
  const daily = DAILY.exec(name);
  if (daily) {
    const dayMs = Date.parse(`${daily[1]}T00:00:00Z`);
    return Number.isNaN(dayMs) ? undefined : { name, kind: 'daily', dayMs };
  }
  if (SESSION.test(name)) return { name, kind: 'session' };
  return undefined;
}
