import type { Reactor } from '../projections/projector.ts';
import { forwardConsentMails } from './addresses/consent-mail.ts';
import { automationEnrolment } from './automations/enrol.ts';
import { broadcastSchedule } from './broadcasts/schedule.ts';
import { domainCheckSchedule } from './domains/schedule.ts';
import { emailDeliverySchedule } from './emails/schedule.ts';
import { memberInvitationMails } from './members/invitation-mail.ts';
import { providerImportSchedule } from './provider-imports/schedule.ts';
import { mailboxImportSchedule } from './mailbox-imports/schedule.ts';
import { exportSchedule } from './exports/schedule.ts';
import { sendingLaneGuard } from './sending-streams/guard.ts';
import { sentMailFiling } from './threads/sent-mail.ts';
import { taskSchedule } from './tasks/schedule.ts';
import { taskRunWork } from './tasks/run-work.ts';
import { taskNoticeMails } from './tasks/notices.ts';
import { webhookDispatch } from './webhooks/dispatch.ts';

/** Every process manager that follows the log in the projection runner: one line per slice. */
export const reactors: readonly Reactor[] = [
  webhookDispatch,
  automationEnrolment,
  domainCheckSchedule,
  forwardConsentMails,
  memberInvitationMails,
  emailDeliverySchedule,
  sendingLaneGuard,
  broadcastSchedule,
  providerImportSchedule,
  mailboxImportSchedule,
  exportSchedule,
  sentMailFiling,
  taskSchedule,
  taskRunWork,
  taskNoticeMails,
];
