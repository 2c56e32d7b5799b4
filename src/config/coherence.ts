import { ConfigError } from '../errors/index.js';
import type { Settings } from './schema.js';

// Settings that constrain each other. A value someone set (env or config.json) wins over a
// default: a default that conflicts with it moves to fit, with a warning, because a user who
// lowers CODEXEC_MAX_TIMEOUT_MS alone means it to apply. Only two set values that conflict are
// an error, since then there is no telling which one the user meant.

export interface Reconciled {
  readonly settings: Settings;
  /** One line per default that moved: which, from what, to what, and why. */
  readonly warnings: readonly string[];
}

type Name = keyof Settings;

/** Make `settings` coherent; `userSet` names the settings given in env or config.json. */
export function reconcile(settings: Settings, userSet: ReadonlySet<string>): Reconciled {
  const s = { ...settings };
  const warnings: string[] = [];
  const set = (name: Name) => userSet.has(name);
  reconcileTimeouts(s, set, warnings);
  reconcileTruncation(s, set, warnings);
  reconcileHttpTimeouts(s, set, warnings);
  return { settings: s, warnings };
}

function reconcileTimeouts(s: Settings, set: (name: Name) => boolean, warnings: string[]): void {
  const { CODEXEC_DEFAULT_TIMEOUT_MS: timeout, CODEXEC_MAX_TIMEOUT_MS: max } = s;
  if (timeout <= max) return;
  if (set('CODEXEC_DEFAULT_TIMEOUT_MS') && set('CODEXEC_MAX_TIMEOUT_MS')) {
    throw new ConfigError(`CODEXEC_DEFAULT_TIMEOUT_MS: must not exceed CODEXEC_MAX_TIMEOUT_MS (${max})`);
  }
  if (set('CODEXEC_MAX_TIMEOUT_MS')) {
    s.CODEXEC_DEFAULT_TIMEOUT_MS = max;
    warnings.push(
      `CODEXEC_DEFAULT_TIMEOUT_MS lowered from its default ${timeout} to ${max} to fit CODEXEC_MAX_TIMEOUT_MS=${max}`,
    );
  } else {
    s.CODEXEC_MAX_TIMEOUT_MS = timeout;
    warnings.push(
      `CODEXEC_MAX_TIMEOUT_MS raised from its default ${max} to ${timeout} to fit CODEXEC_DEFAULT_TIMEOUT_MS=${timeout}`,
    );
  }
}

/** HEAD + TAIL must fit in MAX_OUTPUT_CHARS (the collector keeps both within the cap). */
function reconcileTruncation(s: Settings, set: (name: Name) => boolean, warnings: string[]): void {
  const max = s.CODEXEC_MAX_OUTPUT_CHARS;
  const head = s.CODEXEC_TRUNCATION_HEAD;
  const tail = s.CODEXEC_TRUNCATION_TAIL;
  if (head + tail <= max) return;
  const headSet = set('CODEXEC_TRUNCATION_HEAD');
  const tailSet = set('CODEXEC_TRUNCATION_TAIL');
  if (!set('CODEXEC_MAX_OUTPUT_CHARS')) {
    s.CODEXEC_MAX_OUTPUT_CHARS = head + tail;
    warnings.push(
      `CODEXEC_MAX_OUTPUT_CHARS raised from its default ${max} to ${head + tail} to fit ` +
        `CODEXEC_TRUNCATION_HEAD + CODEXEC_TRUNCATION_TAIL (${head} + ${tail})`,
    );
    return;
  }
  const fixed = (headSet ? head : 0) + (tailSet ? tail : 0);
  if (headSet && tailSet) {
    throw new ConfigError(
      `CODEXEC_TRUNCATION_HEAD: HEAD + TAIL must not exceed CODEXEC_MAX_OUTPUT_CHARS (${max})`,
    );
  }
  if (fixed > max) {
    const name = headSet ? 'CODEXEC_TRUNCATION_HEAD' : 'CODEXEC_TRUNCATION_TAIL';
    throw new ConfigError(`${name}: must not exceed CODEXEC_MAX_OUTPUT_CHARS (${max})`);
  }
  // The defaults left shrink in proportion to share what the set values leave of the cap.
  const defaults = (headSet ? 0 : head) + (tailSet ? 0 : tail);
  const scale = (value: number) => Math.floor((value * (max - fixed)) / defaults);
  const newHead = headSet ? head : scale(head);
  const newTail = tailSet ? tail : scale(tail);
  s.CODEXEC_TRUNCATION_HEAD = newHead;
  s.CODEXEC_TRUNCATION_TAIL = newTail;
  const moved = [
    ...(headSet ? [] : [`CODEXEC_TRUNCATION_HEAD from ${head} to ${newHead}`]),
    ...(tailSet ? [] : [`CODEXEC_TRUNCATION_TAIL from ${tail} to ${newTail}`]),
  ];
  warnings.push(
    `${moved.join(' and ')} (default${moved.length > 1 ? 's' : ''}) lowered to fit CODEXEC_MAX_OUTPUT_CHARS=${max}`,
  );
}

/** Node refuses a request head's time longer than the whole request's (headersTimeout <= requestTimeout). */
function reconcileHttpTimeouts(s: Settings, set: (name: Name) => boolean, warnings: string[]): void {
  const { CODEXEC_HTTP_HEADERS_TIMEOUT_MS: head, CODEXEC_HTTP_REQUEST_TIMEOUT_MS: whole } = s;
  if (head <= whole) return;
  if (set('CODEXEC_HTTP_HEADERS_TIMEOUT_MS') && set('CODEXEC_HTTP_REQUEST_TIMEOUT_MS')) {
    throw new ConfigError(
      `CODEXEC_HTTP_HEADERS_TIMEOUT_MS: must not exceed CODEXEC_HTTP_REQUEST_TIMEOUT_MS (${whole})`,
    );
  }
  if (set('CODEXEC_HTTP_REQUEST_TIMEOUT_MS')) {
    s.CODEXEC_HTTP_HEADERS_TIMEOUT_MS = whole;
    warnings.push(
      `CODEXEC_HTTP_HEADERS_TIMEOUT_MS lowered from its default ${head} to ${whole} to fit CODEXEC_HTTP_REQUEST_TIMEOUT_MS=${whole}`,
    );
  } else {
    s.CODEXEC_HTTP_REQUEST_TIMEOUT_MS = head;
    warnings.push(
      `CODEXEC_HTTP_REQUEST_TIMEOUT_MS raised from its default ${whole} to ${head} to fit CODEXEC_HTTP_HEADERS_TIMEOUT_MS=${head}`,
    );
  }
}
