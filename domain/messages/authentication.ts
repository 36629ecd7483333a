import { z } from 'zod';

/**
 * What the authentication of an arriving message found (SPF, DKIM, DMARC, ARC), kept on the
 * message and shown in the API. Made by infra/inbound/authenticate.ts (mailauth) from its own
 * results; pure data here, so events and rules can carry and read it.
 */

/** RFC 8601 result words, as mailauth reports them (`temperr` read as `temperror`). */
export const AUTH_RESULTS = [
  'pass',
  'fail',
  'softfail',
  'neutral',
  'none',
  'policy',
  'temperror',
  'permerror',
] as const;
export type AuthResult = (typeof AUTH_RESULTS)[number];

export const DMARC_POLICIES = ['none', 'quarantine', 'reject'] as const;
export type DmarcPolicyValue = (typeof DMARC_POLICIES)[number];

export const Authentication = z.object({
  spf: z.object({
    result: z.enum(AUTH_RESULTS),
    /** The domain checked: MAIL FROM's, or the HELO name's for the null sender. */
    domain: z.string().nullable(),
  }),
  dkim: z.array(
    z.object({
      result: z.enum(AUTH_RESULTS),
      /** `d=` and `s=` of the signature (null when it could not be read). */
      domain: z.string().nullable(),
      selector: z.string().nullable(),
      /** Whether the signing domain aligns with the From domain (DMARC's sense). */
      aligned: z.boolean(),
      comment: z.string().nullable(),
    }),
  ),
  /** Null when DMARC could not be evaluated: no From domain, or several (`dmarcSkipped` says). */
  dmarc: z
    .object({
      result: z.enum(AUTH_RESULTS),
      /** The From (author) domain. */
      fromDomain: z.string(),
      /** The policy that applies to this message: the record's p, or sp/np for an inherited one. */
      policy: z.enum(DMARC_POLICIES).nullable(),
      /** Whether the record asks receivers to apply one level less (t=y). */
      testing: z.boolean(),
    })
    .nullable(),
  dmarcSkipped: z.string().nullable(),
  arc: z.object({
    result: z.enum(AUTH_RESULTS),
    /** The highest ARC set on the message (0 when there is none). */
    instance: z.number().int(),
  }),
  /** The Authentication-Results header value we would write, for people and for export. */
  header: z.string(),
});
export type Authentication = z.infer<typeof Authentication>;

/** A result word from mailauth as one of ours; anything unknown is a permanent error. */
export function authResult(value: unknown): AuthResult {
  if (value === 'temperr') return 'temperror';
  return (AUTH_RESULTS as readonly unknown[]).includes(value) ? (value as AuthResult) : 'permerror';
}

export type AuthenticationVerdict = { spam: false } | { spam: true; reason: 'dmarc_reject' | 'dmarc_quarantine' };

/**
 * The spam verdict authentication alone gives: a message that fails DMARC of a domain asking
 * receivers to reject or quarantine such mail is spam (RFC 9989 5.8: a receiver may file it
 * rather than refuse it). ARC does not override it: that needs a list of sealers we trust,
 * which we do not keep.
 */
export function verdictOfAuthentication(auth: Pick<Authentication, 'dmarc'>): AuthenticationVerdict {
  if (auth.dmarc?.result !== 'fail') return { spam: false };
  if (auth.dmarc.policy === 'reject') return { spam: true, reason: 'dmarc_reject' };
  if (auth.dmarc.policy === 'quarantine') return { spam: true, reason: 'dmarc_quarantine' };
  return { spam: false };
}
