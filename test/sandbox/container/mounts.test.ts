// Operator mounts (CODEXEC_MOUNTS) in sandbox mode docker, under each runtime of RUNTIMES: the
// engine is given each source's path (it opens what is there), so the held-directory case of the
// confining modes does not apply.
import { beforeAll, describe } from 'vitest';
import { mountSuite } from '../../helpers/mounts.js';
import { ensureImage, RUNTIMES } from './engine.js';

beforeAll(() => ensureImage(), 600_000);

for (const runtime of RUNTIMES)
  describe.skipIf(runtime.missing)(`operator mounts in docker mode (${runtime.name})`, () => {
    mountSuite(runtime.env, { moves: true, held: false });
  });
