// Set up for every test file (vitest.config.ts): the temporary directories tempDir() made are
// removed once the file's own hooks have run (its servers closed), so no run leaves them in /tmp.
import { afterAll } from 'vitest';
import { removeTempDirs } from './temp.js';

afterAll(() => removeTempDirs());
