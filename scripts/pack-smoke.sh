#!/usr/bin/env bash
# The package as a user gets it: `npm pack`, a global install of the tarball into a fresh prefix
# (dependencies from the npm registry; better-sqlite3 may compile from source), then the installed
# `codexec` runs `doctor` and answers `tools/list` over stdio. Run by .ci/run after `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
tarball=$(npm pack --silent --pack-destination "$work" | tail -1)
npm install -g --prefix "$work/prefix" --no-audit --no-fund "$work/$tarball" >/dev/null
echo "pack-smoke: installed $tarball in $(( $(date +%s) - started )) s"
bin="$work/prefix/bin/codexec"
CODEXEC_HOME="$work/home" "$bin" doctor >/dev/null
# tools/list through the installed bin, with the SDK client the package itself installed.
CODEXEC_HOME="$work/home" node --input-type=module -e "
  const lib = '$work/prefix/lib/node_modules/codexec/node_modules/@modelcontextprotocol/client/dist';
  const { Client } = await import(lib + '/index.mjs');
  const { StdioClientTransport } = await import(lib + '/stdio.mjs');
  const client = new Client({ name: 'pack-smoke', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: '$bin', args: ['serve'], env: { ...process.env } }));
  const { tools } = await client.listTools();
  const run = await client.callTool({ name: 'execute_code', arguments: { language: 'python', code: 'print(6 * 7)' } });
  const found = await client.callTool({ name: 'search_execution_logs', arguments: { query: '6' } });
  await client.close();
  if (run.structuredContent?.stdout !== '42\n') throw new Error('execute_code: ' + JSON.stringify(run.structuredContent));
  // The search index is better-sqlite3's native module: proof that its install script ran.
  if (found.structuredContent?.total_count !== 1) throw new Error('search: ' + JSON.stringify(found.content));
  console.log('pack-smoke: the installed codexec lists ' + tools.length + ' tools, runs code and searches its log');
"
