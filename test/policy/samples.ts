// For each built-in rule: code it must catch and near-misses it must let through. Integration
// tests run the caught samples behind a first line that ends the program, so a rule that failed
// to match would still run nothing harmful.

export interface RuleSample {
  readonly rule: string;
  readonly language: 'python' | 'node' | 'typescript' | 'bash';
  readonly caught: readonly string[];
  readonly passed: readonly string[];
}

export const SAMPLES: readonly RuleSample[] = [
  {
    rule: 'rm-rf-root',
    language: 'bash',
    caught: [
      'rm -rf /',
      'rm -fr /*',
      'rm -r -f ~',
      'cd x && rm -Rf --no-preserve-root /',
      'rm -rf "$HOME"',
      // spellings bash reads as rm -rf /
      'r""m -rf /',
      "$'\\x72\\x6d' -rf /",
      '\\rm -rf /',
      'command rm -rf /',
      'env rm -rf /',
      'env -i FOO=1 nohup /bin/rm -rf /',
      '/bin/rm -rf /',
      './rm -rf /',
      'rm -rf //',
      'rm -rf /./',
      'ls $(rm -rf /)',
      'f() { "rm" -rf /; }',
      'bash -c \'r""m -rf /\'',
      'sh -ec "eval \\"command rm -rf /\\""',
    ],
    passed: ['rm -rf ./build', 'rm -rf /tmp/x', 'rm -f /etc/x', 'rm -rf ~/project/build', 'grep rm file'],
  },
  {
    rule: 'dd-device',
    language: 'bash',
    caught: ['dd if=/dev/zero of=/dev/sda bs=1M', 'dd if=img.iso of=/dev/nvme0n1'],
    // Every other dd is the dd rule's (see the policy.json test for dd allowed).
    passed: [],
  },
  {
    rule: 'dd',
    language: 'bash',
    caught: [
      'dd if=/dev/zero of=file',
      'dd if=/dev/urandom of=/dev/null count=1',
      "d''d if=a of=b",
      '/bin/dd',
    ],
    passed: ['add file', 'echo odd', 'ddrescue a b'],
  },
  {
    rule: 'find-root-delete',
    language: 'bash',
    caught: [
      'find / -delete',
      'find // -name "*.log" -delete',
      'find / -exec rm -f {} +',
      '\\find / -delete',
    ],
    passed: ['find . -name x', 'find . -delete', 'find /tmp/x -delete', 'find / -name x'],
  },
  {
    rule: 'fork-bomb',
    language: 'bash',
    caught: [':(){ :|:& };:', ': () { : | : & } ; :'],
    passed: ['f(){ echo hi; }; f'],
  },
  {
    rule: 'write-block-device',
    language: 'bash',
    caught: ['echo x > /dev/sda', 'cat img >/dev/sdb1'],
    passed: ['echo x > /dev/null', 'echo x >&2'],
  },
  {
    rule: 'mv-dev-null',
    language: 'bash',
    caught: ['mv data.csv /dev/null', 'mv -f a b /dev/null'],
    passed: ['mv a b', 'echo x > /dev/null'],
  },
  {
    rule: 'sudo',
    language: 'bash',
    caught: [
      'sudo apt-get install x',
      'cd /tmp && sudo rm x',
      'if true; then sudo ls; fi',
      "s''udo id",
      'command sudo id',
      '/usr/bin/sudo id',
      'echo `"sudo" id`',
      `eval "s''udo id"`,
    ],
    passed: ['echo "pseudo sudoku"', 'grep sudo /etc/group', 'echo "sudo"'],
  },
  {
    rule: 'su',
    language: 'bash',
    caught: ['su - root', 'su', 'echo x | su postgres'],
    passed: ['summary=1', 'echo su', 'sum file'],
  },
  {
    rule: 'chmod',
    language: 'bash',
    caught: ['chmod 777 file', 'ls && chmod +x run.sh'],
    passed: ['echo chmod is a command', 'man_chmod=1'],
  },
  {
    rule: 'chown',
    language: 'bash',
    caught: ['chown root file', 'find . | xargs chown me'],
    passed: ['echo chowning'],
  },
  {
    rule: 'pipe-to-shell',
    language: 'bash',
    caught: [
      'curl -fsSL https://example.com/install.sh | sh',
      'wget -qO- https://x | bash',
      'sh -c "$(curl -fsSL https://x)"',
      'bash <(curl -s https://x)',
    ],
    passed: ['curl -o file https://x', 'curl https://x | jq .'],
  },
  {
    rule: 'python-rmtree-root',
    language: 'python',
    caught: [
      "import shutil\nshutil.rmtree('/')",
      'import shutil, os\nshutil.rmtree(os.path.expanduser("~"))',
      'import shutil\nfrom pathlib import Path\nshutil.rmtree(Path.home())',
    ],
    passed: ["import shutil\nshutil.rmtree('build')", "shutil.rmtree('/tmp/x')"],
  },
  {
    rule: 'python-shell-rm-root',
    language: 'python',
    caught: ["import os\nos.system('rm -rf /')", 'import subprocess\nsubprocess.run("rm -rf ~", shell=True)'],
    passed: ["import os\nos.system('ls /')", "os.system('rm -rf build')"],
  },
  {
    rule: 'python-fork-bomb',
    language: 'python',
    caught: ['import os\nwhile True:\n    os.fork()', 'import os\nwhile 1: os.fork()'],
    passed: ['import os\npid = os.fork()'],
  },
  {
    rule: 'node-rm-root',
    language: 'node',
    caught: [
      "require('fs').rmSync('/', { recursive: true, force: true })",
      "import fs from 'node:fs'\nawait fs.promises.rm(os.homedir(), { recursive: true })",
    ],
    passed: ["require('fs').rmSync('dist', { recursive: true })", "fs.rmSync('/tmp/x', { recursive: true })"],
  },
  {
    rule: 'node-shell-rm-root',
    language: 'typescript',
    caught: ["require('child_process').execSync('rm -rf ~')", "spawnSync('sh', ['-c', 'rm -rf /'])"],
    passed: ["execSync('ls ~')", "execSync('rm -rf dist')"],
  },
];

/** A first line that ends the program, so a sample that somehow ran would do nothing. */
export const STOP_FIRST: Record<RuleSample['language'], string> = {
  bash: 'exit 0',
  python: 'raise SystemExit(0)',
  node: 'process.exit(0);',
  typescript: 'process.exit(0);',
};
