/** One chain (one replica's, or one CLI process's) as `audit verify` found it. */
export interface ChainReport {
  readonly chain_id: string;
  readonly ok: boolean;
  /** Entries verified (up to the first bad one). */
  readonly entries: number;
  /** Where the chain starts now: 1, or past what retention removed. */
  readonly start_seq: number;
  /** The last seq, as the chain's signed head records it. */
  readonly last_seq: number;
  /** The hash of the last entry verified (the start hash when none). */
  readonly last_hash: string;
  /** Where the chain breaks: the seq (0: the chain's own row in codexec_audit_chains), and why. */
  readonly bad?: { readonly seq: number; readonly reason: string };
}

/** `audit verify` on the postgres store: every chain in the shared table. */
export interface ChainsReport {
  readonly ok: boolean;
  readonly store: 'postgres';
  readonly chains: readonly ChainReport[];
  /** Entries verified, all chains together. */
  readonly entries: number;
  /** The first bad place (chains in id order). */
  readonly bad?: { readonly chain: string; readonly seq: number; readonly reason: string };
}
