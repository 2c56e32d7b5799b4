import type { InputRequiredResult, ServerContext } from '@modelcontextprotocol/server';
import {
  type Approval,
  type ApprovalAsker,
  Approvals,
  type Attempt,
  type RunFacts,
  type Verdict,
} from '../approvals/index.js';
import type { LaneUser } from '../egress/index.js';
import { QuotaExceededError } from '../errors/index.js';
import { decide, type GatePolicy, prepareDecision, type RuleSet } from '../policy/index.js';
import type { RunHold } from '../quotas/index.js';
import type { TaskRun } from '../tasks/index.js';
import { phase } from '../traces/index.js';
import { type CpuMeter, currentPrincipal, type HeldDir, log, withCpuMeter } from '../util/index.js';
import { placeShown } from './place.js';
import { wireOnly } from './run-facts.js';
import type { Services } from './services.js';
import { currentTaskRun, startAsTask, type TaskHandle, taskScopeEra } from './tasks.js';

export { type RunFacts, runFacts } from './run-facts.js';

/**
 * The gate as one MCP connection sees it: the pure decision (policy), then, when it asks, the
 * approval flow (approvals: ask, route, decide, audit), then the run in a run slot, then its audit
 * entry. One per connection (createServer), so trust never leaks from one client to another.
 */
export class Gatekeeper {
  private readonly policy: GatePolicy;
  /** Every question this gate raises, asked of whom CODEXEC_APPROVER says, and every audit entry. */
  private readonly approvals: Approvals;

  /**
   * `trusted`: what the user trusted so far, when it outlives this gate (serve --http: one gate per
   * request, one set per principal); else this gate's own (stdio: one per connection).
   */
  constructor(
    private readonly services: Services,
    asker: ApprovalAsker,
    trusted?: Set<string>,
  ) {
    const { gate } = services.config;
    this.policy = {
      approval: gate.approval,
      allowedRuntimes: gate.allowedRuntimes,
      rules: services.rules,
      commands: services.config.command,
    };
    this.approvals = new Approvals({
      asker,
      approver: gate.approver,
      dashboard: services.approvals,
      pending: services.pendingApprovals,
      metrics: services.metrics,
      audit: services.audit,
      trusted: trusted ?? new Set<string>(),
      // A set handed in is the principal's, shared by all its requests (serve --http).
      trustScope: trusted ? 'principal' : 'connection',
    });
  }

  get rules(): RuleSet {
    return this.policy.rules;
  }

  /**
   * Under approval `ask` with the egress allowlist: what asks, while the code runs, about a host
   * off the list (the approvals' host question); undefined where nothing asks. Called where the
   * run starts.
   */
  egressAsker(ctx: ServerContext, tool: string, sessionId: string | null): LaneUser['ask'] {
    if (this.policy.approval !== 'ask' || this.services.config.network !== 'allowlist') return undefined;
    return this.approvals.hostAsker(ctx, tool, sessionId);
  }

  /**
   * Run `execute` if the gate lets it: returns its result, its task's handle (a call that may
   * become a task), or (2026 era) the input-required result that asks the client first. Refusals
   * throw their coded errors after the audit entry.
   */
  async run<R>(
    ctx: ServerContext,
    attempt: Attempt,
    execute: () => Promise<R>,
    facts: (result: R) => RunFacts,
  ): Promise<R | InputRequiredResult | TaskHandle> {
    await prepareDecision(attempt);
    const decision = decide(attempt, this.policy);
    if (decision.kind === 'refuse') {
      await this.approvals.audit(attempt, { approved: false, approved_by: null, rule: decision.rule });
      throw decision.error;
    }
    const start = (approval: Approval) => {
      const go = this.approvedRun(ctx, attempt, decision.rule, approval, execute, facts);
      // MCP Tasks: approved, the run goes on in the background and the call answers with its task.
      return startAsTask(go) ?? go();
    };
    if (decision.kind === 'run') return start({ approved_by: decision.approvedBy });
    // Where a session's code works matters only to a question (its form, its trust key).
    const asked = await this.approvals.ask(ctx, this.placed(attempt), decision);
    if (asked.kind === 'trusted') return start(asked.approval);
    // In a task: the task starts now and asks inside (a 2026-era retry carrying the answer to an
    // input_required call is read on the call, as before).
    if (taskScopeEra() !== undefined && this.approvals.asksInTask(ctx)) {
      const handle = startAsTask(async () => {
        const answered = await asked.answer((currentTaskRun() as TaskRun).signal);
        // Inside a task the client is asked through the task, never by retry.
        if (answered.kind === 'pending') throw new Error('a question asked by retry inside a task');
        return this.approvedRun(ctx, attempt, decision.rule, answered.approval, execute, facts)();
      });
      if (!handle) throw new Error('a task scope without a task'); // taskScopeEra said there is one
      return handle;
    }
    const answered = await asked.answer(ctx.mcpReq.signal);
    if (answered.kind === 'pending') return answered.result;
    return start(answered.approval);
  }

  /** `attempt` with where a session's code works (its workspace, or the host directory it holds). */
  private placed(attempt: Attempt): Attempt {
    if (attempt.place !== undefined || attempt.sessionId === null) return attempt;
    let dir: HeldDir;
    try {
      dir = this.services.sessions.describe(attempt.sessionId).dir;
    } catch {
      return attempt; // not the caller's live session: the run itself says so
    }
    return { ...attempt, place: placeShown(dir, `session ${attempt.sessionId}'s workspace`) };
  }

  /** The run once approved: in a run slot, its audit entry written whatever its outcome. */
  private approvedRun<R>(
    ctx: ServerContext,
    attempt: Attempt,
    rule: Verdict['rule'],
    approved: Approval,
    execute: () => Promise<R>,
    facts: (result: R) => RunFacts,
  ): () => Promise<R> {
    const approval = { approved: true, ...approved, rule } as const;
    return async () => {
      // A task's run waits for its slot under the task's signal: the call has been answered.
      const signal = currentTaskRun()?.signal ?? ctx.mcpReq.signal;
      const { metrics } = this.services;
      const started = performance.now();
      let result: R;
      // serve --http: the dashboard's feed sees the run (and, through withProgress, its output).
      const feed = this.services.feed;
      const tracked =
        feed && attempt.runs !== false
          ? () => feed.track(attempt, currentPrincipal(), execute, facts)
          : execute;
      try {
        result =
          attempt.runs === false ? await execute() : await this.withSlot(attempt.tool, signal, tracked);
      } catch (error) {
        // A quota's refusal (CODEXEC_QUOTAS) ran nothing: recorded as refused, the limit as its rule.
        const quota = error instanceof QuotaExceededError;
        if (attempt.runs !== false && !quota)
          metrics.runFailed(attempt.tool, attempt.language, performance.now() - started);
        await this.approvals.audit(
          attempt,
          quota ? { approved: false, approved_by: null, rule: `quota:${error.limit}` } : approval,
        );
        throw error;
      }
      if (attempt.runs !== false)
        metrics.runEnded(attempt.tool, attempt.language, result, performance.now() - started);
      await this.approvals.audit(attempt, approval, facts(result));
      return wireOnly(result);
    };
  }

  /**
   * Go on with a run the gate already let through (send_to_session's `input` to the code that
   * waits for it: data for approved code, as write_stdin's is): no new decision or audit entry,
   * but a run slot, and a task where the call may become one.
   */
  resume<R>(ctx: ServerContext, tool: string, execute: () => Promise<R>): Promise<R | TaskHandle> {
    const go = () =>
      this.withSlot(tool, currentTaskRun()?.signal ?? ctx.mcpReq.signal, execute).then(wireOnly);
    return startAsTask(go) ?? go();
  }

  /**
   * Run `execute` holding one of the server's run slots (CODEXEC_MAX_CONCURRENT_RUNS): taken after
   * approval, so nobody's answer is awaited while holding one. Free, it is taken without a tick.
   * The principal's quotas (CODEXEC_QUOTAS) are asked first (a refusal never waits for a slot),
   * then admit the run once it has its slot: it counts as running until it ends, when the CPU its
   * processes used is charged to the principal's day.
   */
  private async withSlot<R>(tool: string, signal: AbortSignal, execute: () => Promise<R>): Promise<R> {
    const { slots, quotas } = this.services;
    const principal = currentPrincipal();
    const checked = quotas?.check(principal);
    if (checked) await checked; // the shared store's counts: one round trip
    let slot = slots.acquire(signal);
    if (typeof slot !== 'function') {
      const asked = Date.now();
      const waited = phase('slot wait');
      try {
        slot = await slot;
      } finally {
        waited?.();
      }
      const { max } = slots.status();
      this.services.metrics.slotWaited(Date.now() - asked);
      log(
        'info',
        `${tool} waited ${Date.now() - asked} ms for a run slot (CODEXEC_MAX_CONCURRENT_RUNS=${max})`,
      );
    }
    let hold: RunHold | undefined;
    try {
      const admitted = quotas?.admit(principal);
      hold = admitted instanceof Promise ? await admitted : admitted;
    } catch (error) {
      slot();
      throw error;
    }
    const meter: CpuMeter = { usec: 0 };
    const ran = phase('run');
    try {
      return await (hold ? withCpuMeter(meter, execute) : execute());
    } finally {
      ran?.();
      hold?.end(meter.usec);
      slot();
    }
  }
}
