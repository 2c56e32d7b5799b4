// Request bytes a principal has in flight over serve --http: read into memory and not yet
// answered. One principal's many large bodies at once would otherwise hold the server's memory
// (each is bounded alone by CODEXEC_HTTP_MAX_BODY_BYTES, their number by the connection caps).

/** CODEXEC_HTTP_MAX_INFLIGHT_BYTES per principal; a reservation is released once its request is answered. */
export class InflightBytes {
  private readonly held = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Count `bytes` more for `principal`, or false (nothing counted) when that passes the bound. */
  take(principal: string, bytes: number): boolean {
    const now = (this.held.get(principal) ?? 0) + bytes;
    if (now > this.max) return false;
    this.held.set(principal, now);
    return true;
  }

  release(principal: string, bytes: number): void {
    const now = (this.held.get(principal) ?? 0) - bytes;
    if (now > 0) this.held.set(principal, now);
    else this.held.delete(principal);
  }

  /** What `principal` holds now (for tests and health). */
  of(principal: string): number {
    return this.held.get(principal) ?? 0;
  }
}
