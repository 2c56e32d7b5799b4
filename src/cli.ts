#!/usr/bin/env node
// codexec command line: `serve` (MCP over stdio, the main job), `run` (one execution from the
// shell), `doctor` (what this machine supports), `image build` (the container sandbox's image).
// stdout of `serve` is the protocol channel. The heap is sized before anything else is loaded:
// loading the program already allocates, and the young generation grows with it.
import { sizeHeap } from './cli/heap.js';

sizeHeap(process.argv.slice(2));
await import('./cli/program.js');
