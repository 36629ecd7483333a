import type { Generated } from 'kysely';
import type { Timestamp } from '../projector.ts';

/**
 * One row per recipient of a message sent with a template, with what became of it. Counting is
 * done when read (queries.ts): each fact is a flag set once, so an event handed over again sets
 * nothing new, and the counts of a day stay right whatever order replays take.
 */
export interface TemplateAnalyticsTables {
  template_sends: {
    /** The mode's partition (domain/shared/partitions.ts). */
    workspace_id: string;
    email_id: string;
    /** Lower-case. */
    recipient: string;
    template_id: string;
    version_id: string;
    /** Lower-case; a narrowed credential counts the mail of what it reaches. */
    from_email: string;
    from_domain: string;
    /** Accepted at: the day a send counts in, with all that happens to it later. */
    sent_at: Timestamp;
    cancelled: Generated<boolean>;
    delivered: Generated<boolean>;
    bounced: Generated<boolean>;
    complained: Generated<boolean>;
    opened: Generated<boolean>;
    clicked: Generated<boolean>;
    unsubscribed: Generated<boolean>;
  };
}
