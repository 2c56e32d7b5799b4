// Sandbox mode landlock beside namespace, in the same run: a server of each, called alternately
// (paced, as an agent calls) for a cold one-shot run, a warm one and a session send, per language.
// Prints p50 / p99 of each and the ratio landlock ÷ namespace. Issue #31's target: landlock warm
// one-shot within 1.5x of namespace warm.
//
//   npm run build && node bench/landlock.mjs [--n 60] [--languages python,node,bash]
import { parseArgs } from 'node:util';
import { interleave, ms, startServer } from './lib.mjs';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '60' },
    languages: { type: 'string', default: 'python,node,bash' },
  },
});
const N = Number(values.n);
const LANGUAGES = values.languages.split(',');
const PACE_MS = 100;
const PRINT1 = { python: 'print(1)', node: 'console.log(1)', bash: 'echo 1' };
const SEND = { python: ['x = 0', 'x += 1'], node: ['var x = 0', 'x += 1'], bash: ['x=0', 'x=$((x + 1))'] };

const rows = [];
function report(scenario, language, pair) {
  const { namespace, landlock } = pair;
  const ratio = landlock.p50 / namespace.p50;
  rows.push({ scenario, language, namespace, landlock, ratio });
  console.log(
    `${scenario.padEnd(14)} ${language.padEnd(7)} namespace ${ms(namespace.p50).padStart(7)} / ${ms(namespace.p99).padStart(7)} ms` +
      `  landlock ${ms(landlock.p50).padStart(7)} / ${ms(landlock.p99).padStart(7)} ms  ×${ratio.toFixed(2)}`,
  );
}

for (const [scenario, poolSize] of [
  ['one-shot cold', '0'],
  ['one-shot warm', '2'],
]) {
  const servers = {
    namespace: await startServer({ CODEXEC_SANDBOX_MODE: 'namespace', CODEXEC_POOL_SIZE: poolSize }),
    landlock: await startServer({ CODEXEC_SANDBOX_MODE: 'landlock', CODEXEC_POOL_SIZE: poolSize }),
  };
  try {
    for (const language of LANGUAGES) {
      const run = (server) => () => server.call('execute_code', { language, code: PRINT1[language] });
      const pair = await interleave(
        { namespace: run(servers.namespace), landlock: run(servers.landlock) },
        { n: N, gapMs: PACE_MS },
      );
      report(scenario, language, pair);
    }
    if (poolSize !== '0') {
      for (const language of LANGUAGES) {
        const sessions = {};
        for (const [mode, server] of Object.entries(servers)) {
          const { session_id } = await server.call('start_session', { language });
          await server.call('send_to_session', { session_id, code: SEND[language][0] });
          sessions[mode] = session_id;
        }
        const send = (mode) => () =>
          servers[mode].call('send_to_session', { session_id: sessions[mode], code: SEND[language][1] });
        const pair = await interleave(
          { namespace: send('namespace'), landlock: send('landlock') },
          { n: N, gapMs: PACE_MS },
        );
        report('session send', language, pair);
        for (const [mode, server] of Object.entries(servers))
          await server.call('close_session', { session_id: sessions[mode] });
      }
    }
  } finally {
    await Promise.all(Object.values(servers).map((server) => server.close()));
  }
}

const warm = rows.filter((row) => row.scenario === 'one-shot warm');
const worst = Math.max(...warm.map((row) => row.ratio));
console.log(`\nlandlock warm ÷ namespace warm, worst language: ×${worst.toFixed(2)} (target ≤ 1.5)`);
