// The warm drivers' job protocol (drivers/warm_*.{py,mjs,sh}), driven directly over a real socket
// as fd 3: the job's length and number of fields come first, so a driver starts the program
// without waiting for the server's half-close (which Node sends only once its event loop turns);
// bash too, its fields each ended by a NUL. Once it has reported, a driver waits for the
// channel's end before it exits.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const DRIVERS = fileURLToPath(new URL('../../drivers/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'codexec-driver-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DRIVER = {
  python: ['/usr/bin/python3', join(DRIVERS, 'warm_python.py')],
  node: [process.execPath, join(DRIVERS, 'warm_node.mjs')],
  bash: ['/bin/bash', join(DRIVERS, 'warm_bash.sh')],
};
const PROGRAM = {
  python: 'import sys\nprint("ran", *sys.argv[1:])',
  node: 'console.log("ran", ...process.argv.slice(2))',
  bash: 'echo ran "$@"',
};
const EXTENSION = { python: 'py', node: 'mjs', bash: 'sh' };

/** A driver whose fd 3 is a connected socket; resolves with our end of it. */
async function startDriver(language: keyof typeof DRIVER) {
  const path = join(dir, `${language}.sock`);
  const server: Server = createServer();
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  // A small Python connects to it, puts the socket on fd 3 and execs the driver.
  const [command, driver] = DRIVER[language] as [string, string];
  const child = spawn(
    '/usr/bin/python3',
    [
      '-c',
      'import os, socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\nfd = s.detach()\nif fd != 3: os.dup2(fd, 3)\nos.set_inheritable(3, True)\nos.execv(sys.argv[2], sys.argv[2:])',
      path,
      command,
      driver,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const control = await accepted;
  server.close();
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  let said = '';
  control.on('data', (chunk: Buffer) => (said += chunk));
  const saying = (text: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`driver said ${JSON.stringify(said)}`)), 10_000);
      const check = () => {
        if (said.includes(text)) {
          clearTimeout(timer);
          control.off('data', check);
          resolve();
        }
      };
      control.on('data', check);
      check();
    });
  // 'close': the exit, and all of its output read ('exit' can come before the last of it).
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { control, saying, exited, stdout: () => stdout, said: () => said };
}

describe.each(['python', 'node', 'bash'] as const)('%s warm driver', (language) => {
  it('runs a job read by its length, before the half-close, reports its status, and exits once the channel ends', async () => {
    const script = join(dir, `program.${EXTENSION[language]}`);
    writeFileSync(script, PROGRAM[language]);
    const driver = await startDriver(language);
    await driver.saying('R\n');
    // An end mark, the script and an argument, each ended by a NUL (bash reads them up to the length).
    const job = Buffer.from(['\n[end]', script, 'é'].map((field) => `${field}\0`).join(''));
    const framed = Buffer.concat([Buffer.from(`${job.length} 3\n`), job]);
    // Split, and no half-close: the driver reads until it has the whole job.
    driver.control.write(framed.subarray(0, 3));
    await new Promise((resolve) => setTimeout(resolve, 50)); // the pause splits the job in two reads
    driver.control.write(framed.subarray(3));
    await driver.saying('0\n');
    expect(driver.said()).toBe('R\n0\n');
    // Reported: it waits for the channel's end (a sandbox held stopped ends it with its kill).
    let exited = false;
    void driver.exited.then(() => (exited = true));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the time a wrong exit is given to show
    expect(exited).toBe(false);
    driver.control.end();
    expect(await driver.exited).toBe(0);
    expect(driver.stdout()).toBe('ran é\n\n[end]');
  });

  it('exits without running anything when the server goes away before the whole job', async () => {
    const driver = await startDriver(language);
    await driver.saying('R\n');
    driver.control.end('40 3\nabc');
    expect(await driver.exited).toBe(0);
    expect(driver.stdout()).toBe('');
  });
});
