/**
 * Run a synchronous clean-up step whose failure changes nothing for the caller (the file is gone
 * already, the directory is not empty and stays).
 */
export function quietly(step: () => void): void {
  try {
    step();
  } catch {
    // nothing to do
  }
}
