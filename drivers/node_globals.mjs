// Loaded before a cold one-shot node or typescript program (node --import): see node_program.mjs.
import { provideGlobals } from './node_program.mjs';

if (process.argv[1]) provideGlobals(process.argv[1]);
