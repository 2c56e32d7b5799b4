// What a principal has in flight over serve --http: request bytes read into memory and not yet
// answered, and requests not yet answered. One principal's many large bodies at once would
// otherwise hold the server's memory (each is bounded alone by CODEXEC_HTTP_MAX_BODY_BYTES), and
// its many open requests (listens, GET streams, long polls, calls) every connection the server has.

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

/** What ends with its request: a response (finished or cut), or an upgraded socket. */
interface Closes {
  once(event: 'close', listener: () => void): unknown;
}

/**
 * CODEXEC_HTTP_MAX_REQUESTS_PER_PRINCIPAL: a place per request a principal has in flight, held
 * from the moment its principal is known until its response closes — answered, or its client gone.
 */
export class InflightRequests {
  private readonly held = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Hold a place for `principal` until `request` closes; false (nothing held) at the bound. */
  hold(principal: string, request: Closes): boolean {
    const now = this.of(principal);
    if (now >= this.max) return false;
    this.held.set(principal, now + 1);
    request.once('close', () => {
      const left = this.of(principal) - 1;
      if (left > 0) this.held.set(principal, left);
      else this.held.delete(principal);
    });
    return true;
  }

  /** How many `principal` has in flight now (for tests and health). */
  of(principal: string): number {
    return this.held.get(principal) ?? 0;
  }
}
