#!/usr/bin/env node
// codexec command line: `serve` (MCP over stdio, the main job), `run` (one execution from the
// shell), `doctor` (what this machine supports), `image build` (the container sandbox's image).
// stdout of `serve` is the protocol channel. The heap is sized before anything else is loaded:
// loading the program already allocates, and the young generation grows with it.
import { sizeHeap } from './cli/heap.js';

const args = process.argv.slice(2);
sizeHeap(args);
// The bare `serve` every MCP client starts needs no command-line parser (cli/serve.ts).
if (args.length === 1 && args[0] === 'serve') await (await import('./cli/serve.js')).serveStdio();
else await import('./cli/program.js');
