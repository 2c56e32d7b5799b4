import type { RuleSpec } from './rules.js';

// The built-in rules, as data. They catch accidents an AI makes with a shell (wiping `/`, writing
// to a disk device, a fork bomb), not attackers: the sandbox is the boundary, and a determined
// program can always spell a command so no regex sees it. Each description names its source.
// For shell code the engine also matches each simple command as its program line (rules.ts:
// `\rm`, `r""m`, `$'\x72m'`, `env rm`, `/bin/rm` all read `rm`), so a pattern names the plain form.

/** Where a command starts: line start, after ; & | ( { ` $( or a keyword that runs one. */
const CMD = String.raw`(?:^|[;&|({\x60]|\$\(|\b(?:then|do|else|exec|xargs|env|time|nohup)\b)\s*`;
/** A recursive rm whose target is the root (`/`, `//`, `/./`), its glob, or the home directory. */
const RM_ROOT =
  String.raw`\brm\s+(?:-{1,2}[\w-]+\s+)*(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\s+(?:-{1,2}[\w-]+\s+)*` +
  String.raw`(?:/[/.]*\*?|~/?\*?|"?\$\{?HOME\}?/?\*?"?)(?=$|[\s;&|'"\x60)])`;
/** Calls that hand a string to a shell (Python and Node). */
const PY_SHELL = String.raw`\b(?:os\.(?:system|popen)|subprocess\.\w+)\s*\([^\n]*`;
const NODE_SHELL = String.raw`\b(?:execSync|execFileSync|spawnSync|exec|execFile|spawn)\s*\([^\n]*`;
const SHELLS = ['bash'] as const;
const NODES = ['node', 'typescript'] as const;

export const BUILTIN_RULES: readonly RuleSpec[] = [
  {
    id: 'rm-rf-root',
    description: 'rm -r(f) of /, /* or the home directory (AG2 sanitize_command "rm -rf", MassGen)',
    languages: SHELLS,
    pattern: RM_ROOT,
    action: 'deny',
  },
  {
    // Listed before `dd` so a device write names it, and it still denies when policy.json allows dd.
    id: 'dd-device',
    description: 'dd writing to a device, of=/dev/… (AG2 sanitize_command "dd", MassGen)',
    languages: SHELLS,
    pattern: String.raw`\bdd\b[^\n;|&]*\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b|fd/)`,
    action: 'deny',
  },
  {
    id: 'dd',
    description: 'dd, any use: it writes raw blocks (AG2 sanitize_command "dd"; allow it in policy.json)',
    languages: SHELLS,
    pattern: String.raw`\bdd\b`,
    action: 'deny',
  },
  {
    id: 'find-root-delete',
    description: 'find from / that deletes: find / -delete, find / -exec rm (codexec, kin of rm -rf /)',
    languages: SHELLS,
    pattern: String.raw`${CMD}find\b[^\n;&|]*\s/[/.]*(?=\s)[^\n;&|]*\s(?:-delete\b|-exec(?:dir)?\s+rm\b)`,
    action: 'deny',
  },
  {
    id: 'fork-bomb',
    description: 'the shell fork bomb :(){ :|:& };: (AG2 sanitize_command, MassGen)',
    languages: SHELLS,
    pattern: String.raw`:\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:`,
    action: 'deny',
  },
  {
    id: 'write-block-device',
    description: 'redirecting output onto a disk, > /dev/sd* (AG2 sanitize_command, MassGen "/dev writes")',
    languages: SHELLS,
    pattern: String.raw`>\s*/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d)`,
    action: 'deny',
  },
  {
    id: 'mv-dev-null',
    description: 'mv … /dev/null, which destroys the file (AG2 sanitize_command, MassGen)',
    languages: SHELLS,
    pattern: String.raw`\bmv\b[^\n;|&]*\s/dev/null\b`,
    action: 'deny',
  },
  {
    id: 'sudo',
    description: 'sudo, privilege escalation (MassGen)',
    languages: SHELLS,
    pattern: `${CMD}sudo\\b`,
    action: 'deny',
  },
  {
    id: 'su',
    description: 'su, switching user (MassGen)',
    languages: SHELLS,
    pattern: `${CMD}su(?=$|\\s)`,
    action: 'deny',
  },
  {
    id: 'chmod',
    description: 'chmod, permission changes (MassGen)',
    languages: SHELLS,
    pattern: `${CMD}chmod\\b`,
    action: 'deny',
  },
  {
    id: 'chown',
    description: 'chown, ownership changes (MassGen)',
    languages: SHELLS,
    pattern: `${CMD}chown\\b`,
    action: 'deny',
  },
  {
    id: 'pipe-to-shell',
    description: 'a download run as a script: curl … | sh, sh -c "$(curl …)", bash <(wget …) (codexec)',
    languages: SHELLS,
    pattern:
      String.raw`\b(?:curl|wget)\b[^\n|;]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b` +
      String.raw`|\b(?:ba|z|da|k)?sh\s+(?:-c\s+)?["']?(?:\$\(|<\()\s*(?:curl|wget)\b`,
    action: 'ask',
  },
  {
    id: 'python-rmtree-root',
    description: "shutil.rmtree('/') or of the home directory (codexec, Python form of rm -rf /)",
    languages: ['python'],
    pattern:
      String.raw`\bshutil\.rmtree\(\s*(?:r?["'](?:/|/\*|~|~/)["']|(?:pathlib\.)?Path\.home\(\)|` +
      String.raw`(?:pathlib\.)?Path\(\s*["']/["']\s*\)|os\.path\.expanduser\(\s*["']~/?["']\s*\)|` +
      String.raw`os\.environ\[\s*["']HOME["']\s*\])`,
    action: 'deny',
  },
  {
    id: 'python-shell-rm-root',
    description: "os.system('rm -rf /') and subprocess kin (codexec, Python form of rm -rf /)",
    languages: ['python'],
    pattern: PY_SHELL + RM_ROOT,
    action: 'deny',
  },
  {
    id: 'python-fork-bomb',
    description: 'os.fork() in an endless loop (codexec, Python form of the fork bomb)',
    languages: ['python'],
    pattern: String.raw`\bwhile\s+(?:True|1)\s*:\s*(?:#[^\n]*)?\n?\s*os\.fork\(\)`,
    action: 'deny',
  },
  {
    id: 'node-rm-root',
    description: "fs.rmSync('/', { recursive: true }) and kin (codexec, Node form of rm -rf /)",
    languages: NODES,
    pattern:
      String.raw`\brm(?:dir)?(?:Sync)?\(\s*(?:["'\x60](?:/|~)["'\x60]|os\.homedir\(\)|process\.env\.HOME)` +
      String.raw`\s*,[^)]*recursive\s*:\s*true`,
    action: 'deny',
  },
  {
    id: 'node-shell-rm-root',
    description: "execSync('rm -rf /') and child_process kin (codexec, Node form of rm -rf /)",
    languages: NODES,
    pattern: NODE_SHELL + RM_ROOT,
    action: 'deny',
  },
];
