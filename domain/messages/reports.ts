/**
 * Delivery status notifications (RFC 3464, and RFC 6533's UTF-8 form) and feedback reports
 * (ARF, RFC 5965) read into plain results: which sent message they are about, which recipients,
 * and what happened. The MIME work (finding the parts, decoding them, the returned headers) is
 * infra/inbound/reports.ts; here are the field blocks of the machine-readable part, which are
 * header-style `Name: value` lines in groups separated by blank lines.
 */

/** The sent message a report returns, as its returned headers show it. */
export interface OriginalMessage {
  /** Without angle brackets. */
  messageId: string | null;
  from: string | null;
  to: string[];
  subject: string | null;
}

export type StatusClass = 'success' | 'transient' | 'permanent';
export type DeliveryAction = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';

export interface DeliveryStatusRecipient {
  /** The address the report is about (Final-Recipient), its type prefix (`rfc822;`) removed. */
  finalRecipient: string | null;
  /** The address as we sent it (Original-Recipient), when the reporter kept it. */
  originalRecipient: string | null;
  action: DeliveryAction | null;
  /** RFC 3463 code, `5.1.1`; derived from the diagnostic or the action when absent. */
  status: string | null;
  statusClass: StatusClass | null;
  /** The remote server's words, `smtp; 550 5.1.1 ...` as `550 5.1.1 ...`, lines joined. */
  diagnostic: string | null;
  remoteMta: string | null;
  lastAttemptDate: string | null;
  willRetryUntil: string | null;
}

export interface DeliveryReport {
  kind: 'delivery-status';
  reportingMta: string | null;
  /** ENVID of our MAIL FROM, when we set one and the reporter returned it. */
  originalEnvelopeId: string | null;
  arrivalDate: string | null;
  original: OriginalMessage;
  recipients: DeliveryStatusRecipient[];
}

export interface FeedbackReport {
  kind: 'feedback';
  /** `abuse`, `fraud`, `virus`, `other`, `not-spam`, `auth-failure`, lower-cased as sent. */
  feedbackType: string;
  /** Whether a person said the mail is unwanted (abuse or fraud): a complaint. */
  complaint: boolean;
  userAgent: string | null;
  version: string | null;
  originalMailFrom: string | null;
  /** Original-Rcpt-To, else the returned To header (often redacted: then matched by message id). */
  recipients: string[];
  arrivalDate: string | null;
  sourceIp: string | null;
  reportingMta: string | null;
  reportedDomains: string[];
  reportedUris: string[];
  authenticationResults: string | null;
  incidents: number;
  original: OriginalMessage;
}

export interface Field {
  /** Lower case. */
  name: string;
  value: string;
}

/**
 * Field groups: lines unfolded (a line starting with white space continues the last field), a
 * blank line ends a group, lines without a colon are skipped (RFC 3464 2.1 is strict; reporters
 * are not).
 */
export function fieldGroups(text: string): Field[][] {
  const groups: Field[][] = [];
  let current: Field[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (current.length > 0) groups.push(current);
      current = [];
    } else if (/^[ \t]/.test(line) && current.length > 0) {
      const last = current[current.length - 1]!;
      last.value = `${last.value} ${line.trim()}`;
    } else {
      const colon = line.indexOf(':');
      if (colon > 0)
        current.push({ name: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1).trim() });
    }
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

const first = (fields: Field[], name: string) => fields.find((f) => f.name === name)?.value ?? null;
const all = (fields: Field[], name: string) => fields.filter((f) => f.name === name).map((f) => f.value);

/** `rfc822; a@b` → `a@b`; `utf-8; 山田@例え.jp` decoded (RFC 6533 `\x{HEX}`); brackets removed. */
export function typedAddress(value: string | null): string | null {
  if (value === null) return null;
  const semicolon = value.indexOf(';');
  const type = semicolon >= 0 ? value.slice(0, semicolon).trim().toLowerCase() : 'rfc822';
  let address = (semicolon >= 0 ? value.slice(semicolon + 1) : value).trim().replace(/^<(.*)>$/, '$1');
  if (type === 'utf-8')
    address = address.replace(/\\x\{([0-9a-f]{1,6})\}/gi, (_, hex: string) =>
      String.fromCodePoint(Number.parseInt(hex, 16)),
    );
  return address === '' ? null : address;
}

/** `dns; mail.example.net` → `mail.example.net`. */
function typedName(value: string | null): string | null {
  if (value === null) return null;
  const semicolon = value.indexOf(';');
  const name = (semicolon >= 0 ? value.slice(semicolon + 1) : value).trim();
  return name === '' ? null : name;
}

/** An RFC 5322 date (comments such as `(UTC)` allowed) as an ISO instant, or null. */
export function reportDate(value: string | null): string | null {
  if (value === null) return null;
  const time = Date.parse(value.replace(/\([^)]*\)/g, '').trim());
  return Number.isNaN(time) ? null : new Date(time).toISOString();
}

const STATUS = /^([245])\.(\d{1,3})\.(\d{1,3})\b/;
const CLASS: Record<string, StatusClass> = { '2': 'success', '4': 'transient', '5': 'permanent' };
const ACTIONS: readonly DeliveryAction[] = ['failed', 'delayed', 'delivered', 'relayed', 'expanded'];
const ACTION_CLASS: Record<DeliveryAction, StatusClass> = {
  failed: 'permanent',
  delayed: 'transient',
  delivered: 'success',
  relayed: 'success',
  expanded: 'success',
};

/**
 * The status code of a recipient: the Status field's, else an enhanced code in the diagnostic
 * (`550 5.1.1 ...`), else none. The class follows the code, else the reply code in the
 * diagnostic, else the action.
 */
function statusOf(
  status: string | null,
  diagnostic: string | null,
  action: DeliveryAction | null,
): { status: string | null; statusClass: StatusClass | null } {
  const code = STATUS.exec(status ?? '')?.[0] ?? /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(diagnostic ?? '')?.[1] ?? null;
  if (code) return { status: code, statusClass: CLASS[code[0]!]! };
  const reply = /^([245])\d\d\b/.exec(diagnostic ?? '')?.[1];
  if (reply) return { status: null, statusClass: CLASS[reply]! };
  return { status: null, statusClass: action ? ACTION_CLASS[action] : null };
}

export function parseDeliveryStatus(text: string, original: OriginalMessage): DeliveryReport {
  const [perMessage = [], ...perRecipient] = fieldGroups(text);
  return {
    kind: 'delivery-status',
    reportingMta: typedName(first(perMessage, 'reporting-mta')),
    originalEnvelopeId: first(perMessage, 'original-envelope-id'),
    arrivalDate: reportDate(first(perMessage, 'arrival-date')),
    original,
    recipients: perRecipient
      .filter((fields) => first(fields, 'final-recipient') !== null || first(fields, 'action') !== null)
      .map((fields) => {
        const actionText = (first(fields, 'action') ?? '').toLowerCase().split(/[\s(]/)[0] as DeliveryAction;
        const action = ACTIONS.includes(actionText) ? actionText : null;
        const diagnostic = typedName(first(fields, 'diagnostic-code'));
        return {
          finalRecipient: typedAddress(first(fields, 'final-recipient')),
          originalRecipient: typedAddress(first(fields, 'original-recipient')),
          action,
          ...statusOf(first(fields, 'status'), diagnostic, action),
          diagnostic,
          remoteMta: typedName(first(fields, 'remote-mta')),
          lastAttemptDate: reportDate(first(fields, 'last-attempt-date')),
          willRetryUntil: reportDate(first(fields, 'will-retry-until')),
        };
      }),
  };
}

const COMPLAINTS = new Set(['abuse', 'fraud']);

export function parseFeedbackReport(text: string, original: OriginalMessage): FeedbackReport {
  // RFC 5965 has one group; a blank line inside a sloppy report must not lose the rest.
  const fields = fieldGroups(text).flat();
  const feedbackType = (first(fields, 'feedback-type') ?? 'other').toLowerCase();
  const rcptTo = all(fields, 'original-rcpt-to')
    .map((value) => typedAddress(value))
    .filter((a): a is string => a !== null);
  const incidents = Number(first(fields, 'incidents') ?? '1');
  return {
    kind: 'feedback',
    feedbackType,
    complaint: COMPLAINTS.has(feedbackType),
    userAgent: first(fields, 'user-agent'),
    version: first(fields, 'version'),
    originalMailFrom: typedAddress(first(fields, 'original-mail-from')),
    recipients: rcptTo.length > 0 ? rcptTo : original.to,
    arrivalDate: reportDate(first(fields, 'arrival-date') ?? first(fields, 'received-date')),
    sourceIp: first(fields, 'source-ip'),
    reportingMta: typedName(first(fields, 'reporting-mta')),
    reportedDomains: all(fields, 'reported-domain'),
    reportedUris: all(fields, 'reported-uri'),
    authenticationResults: first(fields, 'authentication-results'),
    incidents: Number.isInteger(incidents) && incidents > 0 ? incidents : 1,
    original,
  };
}
