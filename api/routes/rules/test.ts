import { z } from 'zod';
import { checkRule } from '../../../domain/rules/decide.ts';
import { evaluateRules, factsOf, noReplyReason, type RuleToEvaluate } from '../../../domain/rules/evaluate.ts';
import type { MessageSummary } from '../../../domain/messages/summary.ts';
import { DomainError } from '../../../domain/shared/errors.ts';
import { DEFAULT_TIME_ZONE } from '../../../domain/shared/time-zones.ts';
import { findFiledMessage, mailboxTimeZone, rulesOfMailbox } from '../../../projections/rules/queries.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { reaches } from '../../narrowing.ts';
import { operation, type Operation } from '../../route.ts';
import { dateTime } from '../../schemas.ts';
import { addressQuery, checkedActions, createBody, mailboxAddress, mailboxOf } from './views.ts';

/** A pasted message is at most this many characters (the raw text as it would arrive). */
const RAW_MAX = 1024 * 1024;

const testView = z.object({
  object: z.literal('rule_test'),
  address: z.string(),
  at: z.string(),
  timeZone: z.string().describe('The mailbox’s time zone, which `hour` and `weekday` were read in.'),
  results: z.array(
    z.object({
      ruleId: z.string().nullable(),
      name: z.string(),
      matched: z.boolean(),
      conditions: z.array(z.boolean()),
    }),
  ),
  matched: z.array(
    z.object({
      ruleId: z.string().nullable(),
      name: z.string(),
      actions: z.array(z.object({ type: z.string(), value: z.string().nullable(), note: z.string().nullable() })),
    }),
  ),
  rejected: z.boolean(),
});

/**
 * The dry run: the mailbox's rules (or one unsaved `rule`) over a filed message (`messageId`, a
 * thread message's `mes_` id) or a pasted one (`raw`), at `at` (default now). Changes nothing.
 */
export const ruleTestOperation = (deps: ApiDeps): Operation =>
  operation({
    method: 'POST',
    url: '/rules/test',
    operationId: 'testRules',
    errors: [
      'address_required',
      'address_has_no_mailbox',
      'resource_not_found',
      'reject_needs_envelope',
      'label_not_found',
      'template_not_found',
    ],
    summary: 'Dry-run rules against a message',
    description:
      'Scope: `rules:read`. Runs the mailbox’s enabled rules (`?address=`), or the unsaved `rule` alone, over a filed message ' +
      '(`messageId`) or a pasted raw message (`raw`; its envelope sender is `envelopeFrom`, else its Return-Path, else From; ' +
      'it is not judged as spam), at `at` (default now) in the mailbox’s time zone. Nothing is filed, sent, counted or changed.',
    scope: 'rules:read',
    idempotency: false,
    bodyLimit: RAW_MAX * 2,
    query: z.strictObject({ address: addressQuery }),
    body: z
      .strictObject({
        messageId: z.string().max(400).optional(),
        raw: z.string().min(1).max(RAW_MAX).optional(),
        envelopeFrom: z.string().max(320).optional(),
        rule: createBody.optional(),
        at: dateTime.optional(),
      })
      .refine((b) => (b.messageId === undefined) !== (b.raw === undefined), {
        message: 'give exactly one of `messageId` and `raw`',
        path: ['messageId'],
      }),
    response: testView,
    handler: async ({ credential, query, body }) => {
      const address = mailboxAddress(query.address);
      const workspaceId = credential.workspaceId;
      let summary: MessageSummary;
      let mailFrom: string;
      let spam = false;
      if (body.messageId !== undefined) {
        const row = await findFiledMessage(deps.db, workspaceId, body.messageId);
        if (!row || row.address !== address || !reaches(credential, address))
          throw new ApiError('resource_not_found', 'No such message in this mailbox.', 'messageId');
        summary = row.summary as MessageSummary;
        mailFrom = row.mail_from;
        spam = (row.spam as { spam: boolean }).spam;
      } else {
        summary = await deps.parseMessage(Buffer.from(body.raw!, 'utf8'));
        const returnPath = summary.headers.find((h) => h.name.toLowerCase() === 'return-path')?.value;
        mailFrom = body.envelopeFrom ?? returnPath?.replace(/[<>\s]/g, '') ?? summary.from?.address ?? '';
      }
      let rules: RuleToEvaluate[];
      if (body.rule) {
        const r = body.rule;
        const mailbox = await mailboxOf(deps, credential, address);
        rules = [
          await underRule(async () => {
            const draft = {
              ruleId: '',
              createdAt: '',
              name: r.name,
              description: r.description ?? null,
              enabled: true,
              match: r.match ?? 'all',
              conditions: r.conditions,
              actions: await checkedActions(deps, workspaceId, mailbox, r.actions),
              stopProcessing: r.stopProcessing ?? false,
              position: 0,
            };
            checkRule(draft);
            return draft;
          }),
        ];
        // A narrowed credential sees no rules of a mailbox it does not reach, as GET /rules lists none.
      } else rules = reaches(credential, address) ? await rulesOfMailbox(deps.db, workspaceId, address) : [];
      const at = body.at ?? new Date().toISOString();
      const facts = factsOf(summary, { mailFrom, spam });
      // Like its rules, an unreached mailbox's zone is not shown (nor whether it exists).
      const timeZone = reaches(credential, address)
        ? await mailboxTimeZone(deps.db, workspaceId, address)
        : DEFAULT_TIME_ZONE;
      const evaluation = evaluateRules(rules, facts, { now: at, timeZone });
      const noReply = noReplyReason(facts);
      const id = (ruleId: string) => (ruleId === '' ? null : ruleId);
      return {
        object: 'rule_test' as const,
        address,
        at,
        timeZone,
        results: evaluation.results.map((r) => ({ ...r, ruleId: id(r.ruleId) })),
        matched: evaluation.matched.map((m) => ({
          ruleId: id(m.ruleId),
          name: m.name,
          actions: m.actions.map((a) => ({ ...a, note: a.type === 'reply' ? noReply : null })),
        })),
        rejected: evaluation.matched.some((m) => m.actions.some((a) => a.type === 'reject')),
      };
    },
  });

/** A refusal of the pasted rule names its field under `rule.`, wherever it was found. */
async function underRule<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DomainError) throw new ApiError(error.code, error.message, `rule.${error.param}`);
    if (error instanceof ApiError && error.param !== null)
      throw new ApiError(error.code, error.message, `rule.${error.param}`, error.status);
    throw error;
  }
}
