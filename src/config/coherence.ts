import { ConfigError } from '../errors/index.js';
import type { Settings } from './settings/index.js';

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
/** The settings whose value is a number. */
type NumericName = { [K in Name]: Settings[K] extends number ? K : never }[Name];

/** What to do with settings that cannot start a server: throw (the default), or note them. */
type Fail = (message: string) => void;

/**
 * Make `settings` coherent; `userSet` names the settings given in env or config.json. Settings that
 * conflict throw ConfigError, or, given `problems` (doctor: report them and all else it can), are
 * listed there and left as they are.
 */
export function reconcile(settings: Settings, userSet: ReadonlySet<string>, problems?: string[]): Reconciled {
  const s = { ...settings };
  const warnings: string[] = [];
  const set = (name: Name) => userSet.has(name);
  const fail: Fail = (message) => {
    if (!problems) throw new ConfigError(message);
    problems.push(message);
  };
  reconcileOrder(s, set, warnings, fail, 'CODEXEC_DEFAULT_TIMEOUT_MS', 'CODEXEC_MAX_TIMEOUT_MS');
  reconcileTruncation(s, set, warnings, fail);
  // Node refuses a request head's time longer than the whole request's (headersTimeout <= requestTimeout).
  reconcileOrder(
    s,
    set,
    warnings,
    fail,
    'CODEXEC_HTTP_HEADERS_TIMEOUT_MS',
    'CODEXEC_HTTP_REQUEST_TIMEOUT_MS',
  );
  // No proxy confines code that has the host's network (auto's subprocess off Linux: refused per run).
  if (s.CODEXEC_NETWORK === 'allowlist' && s.CODEXEC_SANDBOX_MODE === 'subprocess')
    fail(
      'CODEXEC_NETWORK: allowlist needs a sandbox (CODEXEC_SANDBOX_MODE namespace, landlock, docker or auto); in subprocess mode code has the host network',
    );
  if (s.CODEXEC_NETWORK !== 'allowlist')
    for (const name of ['CODEXEC_ALLOWED_DOMAINS', 'CODEXEC_DENIED_DOMAINS'] as const)
      if (s[name] !== '')
        warnings.push(`${name} is ignored: CODEXEC_NETWORK is ${s.CODEXEC_NETWORK}, not allowlist`);
  // Replicas must verify each other's approval tickets and calls: one key, from a shared file.
  if (s.CODEXEC_STORE !== 'sqlite' && !s.CODEXEC_APPROVAL_KEY_FILE)
    fail(
      'CODEXEC_APPROVAL_KEY_FILE: required with a postgres CODEXEC_STORE (every replica reads the same key; make one with `head -c 32 /dev/urandom > approval.key`)',
    );
  // Who answers matters only where something asks.
  if (s.CODEXEC_APPROVER !== 'client' && s.CODEXEC_APPROVAL === 'auto')
    warnings.push(
      `CODEXEC_APPROVER=${s.CODEXEC_APPROVER} is asked nothing: CODEXEC_APPROVAL is auto, which never asks (set it to ask or risky)`,
    );
  if (s.CODEXEC_STORE === 'sqlite' && s.CODEXEC_ADVERTISE_URL)
    warnings.push('CODEXEC_ADVERTISE_URL is ignored: CODEXEC_STORE is sqlite (no replicas)');
  return { settings: s, warnings };
}

/**
 * `low` must not exceed `high`: both set and in conflict stops start-up; else the one left at its
 * default moves to the other's value, with a warning.
 */
function reconcileOrder(
  s: Settings,
  set: (name: Name) => boolean,
  warnings: string[],
  fail: Fail,
  low: NumericName,
  high: NumericName,
): void {
  const lowValue = s[low];
  const highValue = s[high];
  if (lowValue <= highValue) return;
  if (set(low) && set(high)) {
    fail(`${low}: must not exceed ${high} (${highValue})`);
    return;
  }
  if (set(high)) {
    s[low] = highValue;
    warnings.push(`${low} lowered from its default ${lowValue} to ${highValue} to fit ${high}=${highValue}`);
  } else {
    s[high] = lowValue;
    warnings.push(`${high} raised from its default ${highValue} to ${lowValue} to fit ${low}=${lowValue}`);
  }
}

/** HEAD + TAIL must fit in MAX_OUTPUT_CHARS (the collector keeps both within the cap). */
function reconcileTruncation(
  s: Settings,
  set: (name: Name) => boolean,
  warnings: string[],
  fail: Fail,
): void {
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
    fail(`CODEXEC_TRUNCATION_HEAD: HEAD + TAIL must not exceed CODEXEC_MAX_OUTPUT_CHARS (${max})`);
    return;
  }
  if (fixed > max) {
    fail(
      `${headSet ? 'CODEXEC_TRUNCATION_HEAD' : 'CODEXEC_TRUNCATION_TAIL'}: must not exceed CODEXEC_MAX_OUTPUT_CHARS (${max})`,
    );
    return;
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
