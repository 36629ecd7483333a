import t from 'tap';
import {
  decideCreateDraft,
  decideDeleteDraft,
  decideRefuseDraftSend,
  decideSendDraft,
  decideStartDraftSend,
  decideUpdateDraft,
} from '../../domain/drafts/decide.ts';
import type { DraftContent, DraftEvent } from '../../domain/drafts/events.ts';
import { checkDraft, type DraftInput } from '../../domain/drafts/rules.ts';
import { draftAggregate, type DraftState, SEND_HOLD_MS } from '../../domain/drafts/state.ts';
import {
  decideDeleteFile,
  decideReleaseFileUse,
  decideReserveFileUse,
  decideUploadFile,
} from '../../domain/files/decide.ts';
import type { FileEvent } from '../../domain/files/events.ts';
import { fileAggregate, type FileState } from '../../domain/files/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const givenFile = (...events: FileEvent[]): FileState =>
  events.reduce(fileAggregate.evolve, fileAggregate.initialState);
const uploaded: FileEvent = {
  type: 'FileUploaded',
  data: {
    fileId: 'fil_1',
    owner: null,
    filename: 'a.pdf',
    contentType: 'application/pdf',
    size: 3,
    sha256: 'a'.repeat(64),
    uploadedAt: NOW,
  },
};
const reserved = (draftId: string): FileEvent => ({
  type: 'FileUseReserved',
  data: { fileId: 'fil_1', draftId, at: NOW },
});

t.test('files: upload once, a use per draft, a delete refused while a draft names the file', async (t) => {
  t.same(decideUploadFile(givenFile(), uploaded.data), [uploaded]);
  t.same(decideUploadFile(givenFile(uploaded), uploaded.data), [], 'a retried upload records nothing');

  const use = { fileId: 'fil_1', draftId: 'drf_1', param: 'attachments.0.fileId', now: NOW };
  t.same(decideReserveFileUse(givenFile(uploaded), use), [reserved('drf_1')]);
  t.same(decideReserveFileUse(givenFile(uploaded, reserved('drf_1')), use), [], 'the same draft again: nothing');
  t.match(
    refusal(() => decideReserveFileUse(givenFile(), use)),
    {
      code: 'invalid_parameter',
      param: 'attachments.0.fileId',
    },
  );
  const deleted: FileEvent = { type: 'FileDeleted', data: { fileId: 'fil_1', at: NOW } };
  t.match(
    refusal(() => decideReserveFileUse(givenFile(uploaded, deleted), use)),
    { code: 'invalid_parameter' },
  );

  const inUse = givenFile(uploaded, reserved('drf_1'), reserved('drf_2'));
  t.match(
    refusal(() => decideDeleteFile(inUse, { fileId: 'fil_1', stale: [], now: NOW })),
    {
      code: 'file_in_use',
      param: 'id',
    },
  );
  t.match(
    refusal(() => decideDeleteFile(inUse, { fileId: 'fil_1', stale: ['drf_1'], now: NOW })),
    { code: 'file_in_use' },
    'one stale use released does not free a file another draft names',
  );
  t.same(
    decideDeleteFile(inUse, { fileId: 'fil_1', stale: ['drf_1', 'drf_2', 'drf_9'], now: NOW }),
    [
      { type: 'FileUseReleased', data: { fileId: 'fil_1', draftId: 'drf_1', at: NOW } },
      { type: 'FileUseReleased', data: { fileId: 'fil_1', draftId: 'drf_2', at: NOW } },
      deleted,
    ],
    'stale uses go in the same append as the delete; an unknown one is ignored',
  );
  const released = decideReleaseFileUse(inUse, { fileId: 'fil_1', draftId: 'drf_1', now: NOW });
  t.same(decideReleaseFileUse(givenFile(uploaded), { fileId: 'fil_1', draftId: 'drf_1', now: NOW }), []);
  t.equal(givenFile(uploaded, reserved('drf_1'), reserved('drf_2'), ...released).uses.size, 1);
  t.same(decideDeleteFile(givenFile(uploaded), { fileId: 'fil_1', stale: [], now: NOW }), [deleted]);
  t.match(
    refusal(() => decideDeleteFile(givenFile(uploaded, deleted), { fileId: 'fil_1', stale: [], now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
});

const content: DraftContent = {
  from: 'Ann <ann@example.com>',
  address: 'ann@example.com',
  domain: 'example.com',
  to: [],
  cc: [],
  bcc: [],
  replyTo: [],
  subject: null,
  text: null,
  html: null,
  signatureId: null,
  attachments: [],
  inReplyTo: null,
  references: [],
};
const givenDraft = (...events: DraftEvent[]): DraftState =>
  events.reduce(draftAggregate.evolve, draftAggregate.initialState);
const created: DraftEvent = { type: 'DraftCreated', data: { draftId: 'drf_1', content, at: NOW } };

t.test('drafts: created once, updated and deleted while live, sent once under its email id', async (t) => {
  t.same(decideCreateDraft(givenDraft(), { draftId: 'drf_1', content, now: NOW }), [created]);
  t.same(decideCreateDraft(givenDraft(created), { draftId: 'drf_1', content, now: NOW }), [], 'a retried create');
  const edited = { ...content, subject: 'Hi' };
  t.same(decideUpdateDraft(givenDraft(created), { draftId: 'drf_1', content: edited, now: NOW }), [
    { type: 'DraftUpdated', data: { draftId: 'drf_1', content: edited, at: NOW } },
  ]);
  t.match(
    refusal(() => decideUpdateDraft(givenDraft(), { draftId: 'drf_1', content, now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
  const sent = decideSendDraft(givenDraft(created), { draftId: 'drf_1', emailId: 'em_1', now: NOW });
  t.same(sent, [{ type: 'DraftSent', data: { draftId: 'drf_1', emailId: 'em_1', at: NOW } }]);
  const after = givenDraft(created, ...sent);
  t.same(decideSendDraft(after, { draftId: 'drf_1', emailId: 'em_1', now: NOW }), [], 'the same send again');
  t.match(
    refusal(() => decideSendDraft(after, { draftId: 'drf_1', emailId: 'em_2', now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
  for (const decide of [
    () => decideUpdateDraft(after, { draftId: 'drf_1', content, now: NOW }),
    () => decideDeleteDraft(after, { draftId: 'drf_1', now: NOW }),
  ])
    t.match(refusal(decide), { code: 'resource_not_found' }, 'a sent draft is gone');
  const deleted = givenDraft(created, ...decideDeleteDraft(givenDraft(created), { draftId: 'drf_1', now: NOW }));
  t.match(
    refusal(() => decideDeleteDraft(deleted, { draftId: 'drf_1', now: NOW })),
    { code: 'resource_not_found' },
  );
});

t.test('a send holds the draft until sent or refused; the hold lapses after SEND_HOLD_MS', async (t) => {
  const cmd = { draftId: 'drf_1', emailId: 'em_1', now: NOW };
  const holding = decideStartDraftSend(givenDraft(created), cmd);
  t.same(holding, [{ type: 'DraftSending', data: { draftId: 'drf_1', emailId: 'em_1', at: NOW } }]);
  const held = givenDraft(created, ...holding);
  const soon = new Date(Date.parse(NOW) + SEND_HOLD_MS - 1).toISOString();
  const later = new Date(Date.parse(NOW) + SEND_HOLD_MS).toISOString();
  for (const decide of [
    () => decideUpdateDraft(held, { draftId: 'drf_1', content, now: soon }),
    () => decideDeleteDraft(held, { draftId: 'drf_1', now: soon }),
  ])
    t.match(refusal(decide), { code: 'draft_sending', param: 'id' }, 'held');
  t.equal(decideUpdateDraft(held, { draftId: 'drf_1', content, now: later }).length, 1, 'a lapsed hold blocks nothing');
  t.equal(decideStartDraftSend(held, cmd).length, 1, 'a retried send takes the hold over');
  const refused = decideRefuseDraftSend(held, cmd);
  t.same(refused, [{ type: 'DraftSendRefused', data: { draftId: 'drf_1', emailId: 'em_1', at: NOW } }]);
  t.equal(decideDeleteDraft(givenDraft(created, ...holding, ...refused), { draftId: 'drf_1', now: soon }).length, 1);
  t.same(decideRefuseDraftSend(givenDraft(created), cmd), [], 'no hold, nothing to hand back');
  const sent = givenDraft(created, ...holding, ...decideSendDraft(held, cmd));
  t.same(decideStartDraftSend(sent, cmd), [], 'sent already as em_1');
  t.same(decideRefuseDraftSend(sent, cmd), [], 'a sent draft is not handed back');
});

t.test('a draft holds only what a send could carry; what is missing is the send to refuse', async (t) => {
  const input: DraftInput = {
    from: 'Ann <Ann@Example.com>',
    to: [],
    cc: [],
    bcc: [],
    replyTo: [],
    subject: null,
    text: null,
    html: null,
    attachments: [],
    inReplyTo: '<a@b.test>',
    references: ['c@d.test'],
  };
  t.same(checkDraft(input), {
    address: 'ann@example.com',
    domain: 'example.com',
    inReplyTo: 'a@b.test',
    references: ['c@d.test'],
  });
  t.match(
    refusal(() => checkDraft({ ...input, from: 'nobody' })),
    { code: 'invalid_email_address', param: 'from' },
  );
  const fifty = Array.from({ length: 50 }, (_, i) => `r${i}@x.test`);
  t.same(
    checkDraft({ ...input, to: fifty.slice(0, 25), bcc: fifty.slice(25) }),
    { address: 'ann@example.com', domain: 'example.com', inReplyTo: 'a@b.test', references: ['c@d.test'] },
    '50 recipients',
  );
  t.match(
    refusal(() => checkDraft({ ...input, to: fifty, cc: ['one@more.test'] })),
    {
      code: 'too_many_recipients',
      param: 'to',
    },
  );
  t.same(
    checkDraft({ ...input, to: [...fifty, 'R0@X.test'] }),
    { address: 'ann@example.com', domain: 'example.com', inReplyTo: 'a@b.test', references: ['c@d.test'] },
    'one address twice counts once',
  );
  t.match(
    refusal(() => checkDraft({ ...input, subject: 'x'.repeat(999) })),
    { param: 'subject' },
  );
  t.match(
    refusal(() => checkDraft({ ...input, references: ['ok@x.test', 'not an id'] })),
    {
      code: 'invalid_parameter',
      param: 'references.1',
    },
  );
});
