// Approval tickets used once: a 2026-era retry that carried an approval cannot be sent again to
// run the same code again ("approve: run it once"), on this server or, with a postgres store, on
// any replica (the store's nonce table).

/** Claims a ticket's nonce: true the first time, by whichever server; kept at least until `untilMs`. */
export interface SpentTickets {
  claim(nonce: string, untilMs: number): Promise<boolean>;
}

/** One server's spent tickets, each forgotten once its ticket could no longer be answered anyway. */
export class LocalSpentTickets implements SpentTickets {
  private readonly spent = new Map<string, number>();

  async claim(nonce: string, untilMs: number): Promise<boolean> {
    const now = Date.now();
    for (const [key, until] of this.spent) if (until < now) this.spent.delete(key);
    if (this.spent.has(nonce)) return false;
    this.spent.set(nonce, untilMs);
    return true;
  }
}
