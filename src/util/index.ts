// Small helpers shared by every module: ids, paths, directory checks, stderr logging, quiet clean-up.
// Nothing here knows about MCP, sandboxes or configuration.

export {
  actingAs,
  assertMay,
  at,
  type DirWalk,
  inParentBeneath,
  listBeneath,
  openBeneath,
  openDirBeneath,
  openRoot,
  type RawName,
  READ,
  SEARCH,
  segmentsOf,
  unlinkBeneath,
  type WalkEntry,
  type WalkOptions,
  WRITE,
  walkBeneath,
} from './beneath.js';
export { type BoundedRead, readUpTo } from './bounded.js';
export { type CpuMeter, chargeCpu, cpuBetween, metering, withCpuMeter } from './cpu-meter.js';
export { holdsOnly } from './dirs.js';
export { HeldDir, type Owner, pathOf, type Root } from './held-dir.js';
export { endToEnd, HOP_BY_HOP, valuesOf } from './hop-by-hop.js';
export { type IdPrefix, newId } from './ids.js';
export { lazily } from './lazily.js';
export { type LogLevel, log, logAlways, onLog, setLogLevel } from './log.js';
export { needsShowing, quotedPath, shownName, unshownName } from './names.js';
export { PACKAGE_VERSION, packagePath } from './package.js';
export { expandHome, isWithin } from './paths.js';
export { asPrincipal, currentPrincipal, LOCAL_PRINCIPAL, principalFolder } from './principal.js';
export { privateDatabase } from './private-file.js';
export { quietly } from './quietly.js';
export { readSmallFile } from './small-file.js';
export { isoTime, settledWithin } from './time.js';
