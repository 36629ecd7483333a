import { accountsProjector } from './accounts/projector.ts';
import { tempInboxesProjector } from './temp-inboxes/projector.ts';
import { addressesProjector } from './addresses/projector.ts';
import { apiKeysProjector } from './api-keys/projector.ts';
import { automationsProjector } from './automations/projector.ts';
import { broadcastsProjector } from './broadcasts/projector.ts';
import { contactEventsProjector } from './contact-events/projector.ts';
import { contactsProjector } from './contacts/projector.ts';
import { domainsProjector } from './domains/projector.ts';
import { draftsProjector } from './drafts/projector.ts';
import { emailsProjector } from './emails/projector.ts';
import { filesProjector } from './files/projector.ts';
import { membersProjector } from './members/projector.ts';
import type { Projector } from './projector.ts';
import { providerImportsProjector } from './provider-imports/projector.ts';
import { mailboxImportsProjector } from './mailbox-imports/projector.ts';
import { exportsProjector } from './exports/projector.ts';
import { rolesProjector } from './roles/projector.ts';
import { sendingStreamsProjector } from './sending-streams/projector.ts';
import { signaturesProjector } from './signatures/projector.ts';
import { suppressionsProjector } from './suppressions/projector.ts';
import { unsubscribesProjector } from './unsubscribes/projector.ts';
import { templateAnalyticsProjector } from './template-analytics/projector.ts';
import { templatesProjector } from './templates/projector.ts';
import { threadsProjector } from './threads/projector.ts';
import { rulesProjector } from './rules/projector.ts';
import { tasksProjector } from './tasks/projector.ts';
import { webhookEndpointsProjector } from './webhooks/projector.ts';
import { workspacesProjector } from './workspaces/projector.ts';

/** Every read model the runner keeps up to date: one line per slice. */
export const projectors: readonly Projector[] = [
  workspacesProjector,
  apiKeysProjector,
  rolesProjector,
  addressesProjector,
  signaturesProjector,
  suppressionsProjector,
  unsubscribesProjector,
  templatesProjector,
  webhookEndpointsProjector,
  contactsProjector,
  contactEventsProjector,
  automationsProjector,
  domainsProjector,
  sendingStreamsProjector,
  emailsProjector,
  templateAnalyticsProjector,
  broadcastsProjector,
  providerImportsProjector,
  mailboxImportsProjector,
  exportsProjector,
  threadsProjector,
  rulesProjector,
  tasksProjector,
  filesProjector,
  draftsProjector,
  membersProjector,
  accountsProjector,
  tempInboxesProjector,
];
