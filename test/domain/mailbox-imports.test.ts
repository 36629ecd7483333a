import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  chunkSize,
  chunksOf,
  decideCancelMailboxImport,
  decideCreateMailboxImport,
  decideFinishMailboxImport,
  decideQueueMailboxImport,
  decideRecordUploadDeleted,
  decideStartMailboxImport,
} from '../../domain/mailbox-imports/decide.ts';
import { emptyProgress, type MailboxImportEvent } from '../../domain/mailbox-imports/events.ts';
import {
  detectFormat,
  isExecutableName,
  placeMessage,
  splitLabels,
  unsafeEntryName,
} from '../../domain/mailbox-imports/formats.ts';
import { mailboxImportsAggregate, type MailboxImportsState } from '../../domain/mailbox-imports/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const A = 'imp_00000000000000000000000a';
const B = 'imp_00000000000000000000000b';
const mailbox = (addressId: string) => ({ addressId, address: `${addressId}@x.test`, domainId: 'd', domain: 'x.test' });
const OPTIONS = { keepInbox: true, includeSpam: false, includeTrash: false };

const given = (events: MailboxImportEvent[]): MailboxImportsState =>
  events.reduce(mailboxImportsAggregate.evolve, mailboxImportsAggregate.initialState);
const create = (importId: string, addressId = 'addr_1', files = [{ name: 'a.mbox', bytes: 2500 }]) =>
  decideCreateMailboxImport(given([]), {
    importId,
    mailbox: mailbox(addressId),
    files,
    chunkBytes: 1000,
    options: OPTIONS,
    now: NOW,
  });
const queued = (importId: string): MailboxImportEvent => ({
  type: 'MailboxImportQueued',
  data: { importId, formats: ['mbox'], queuedAt: NOW },
});

t.test('create: the upload plan, 50 files at most', async (t) => {
  t.match(create(A), [
    { type: 'MailboxImportCreated', data: { files: [{ bytes: 2500, chunks: 3 }], chunkBytes: 1000 } },
  ]);
  t.equal(chunksOf(2000, 1000), 2);
  t.equal(chunkSize(2500, 1000, 2), 500);
  const files = (n: number) => Array.from({ length: n }, () => ({ name: 'f', bytes: 1 }));
  t.equal(create(A, 'addr_1', files(50)).length, 1);
  t.equal(refusal(() => create(A, 'addr_1', files(51))).code, 'too_many_files');
});

t.test('one queued or running per address; uploading ones do not count', async (t) => {
  const state = given([...create(A), ...create(B)]);
  t.equal(decideQueueMailboxImport(state, { importId: A, formats: ['mbox'], now: NOW }).length, 1);
  const busy = given([...create(A), ...create(B), queued(A)]);
  t.equal(
    refusal(() => decideQueueMailboxImport(busy, { importId: B, formats: ['mbox'], now: NOW })).code,
    'already_running',
  );
  t.equal(
    refusal(() =>
      decideCreateMailboxImport(busy, {
        importId: 'imp_c',
        mailbox: mailbox('addr_1'),
        files: [],
        chunkBytes: 1,
        options: OPTIONS,
        now: NOW,
      }),
    ).code,
    'already_running',
  );
  t.same(decideQueueMailboxImport(busy, { importId: A, formats: ['mbox'], now: NOW }), [], 'a repeat start');
  const other = decideCreateMailboxImport(busy, {
    importId: 'imp_d',
    mailbox: mailbox('addr_2'),
    files: [],
    chunkBytes: 1,
    options: OPTIONS,
    now: NOW,
  });
  t.equal(other.length, 1, 'another address');
});

t.test('start, settle, cancel and the upload deleted', async (t) => {
  const history = [...create(A), queued(A)];
  const started = decideStartMailboxImport(given(history), { importId: A, now: NOW });
  t.equal(started.length, 1);
  const running = [...history, ...started];
  const done = decideFinishMailboxImport(given(running), {
    importId: A,
    progress: emptyProgress(),
    error: 'broken',
    now: NOW,
  });
  t.match(done, [{ type: 'MailboxImportFailed', data: { error: 'broken' } }]);
  t.same(decideCancelMailboxImport(given([...running, ...done]), { importId: A, now: NOW }), [], 'settled');
  t.equal(
    refusal(() => decideQueueMailboxImport(given([...running, ...done]), { importId: A, formats: [], now: NOW })).code,
    'import_settled',
  );
  t.same(decideRecordUploadDeleted(given(running), { importId: A, now: NOW }), [], 'not while it runs');
  t.equal(decideRecordUploadDeleted(given([...running, ...done]), { importId: A, now: NOW }).length, 1);
  const cancelled = decideCancelMailboxImport(given(history), { importId: A, now: NOW });
  t.same(decideStartMailboxImport(given([...history, ...cancelled]), { importId: A, now: NOW }), [], 'a cancel wins');
  t.equal(refusal(() => decideCancelMailboxImport(given([]), { importId: A, now: NOW })).code, 'resource_not_found');
  const expired = { importId: A, now: NOW, expired: 'Expired.' };
  t.same(decideCancelMailboxImport(given(history), expired), [], 'the expiry leaves an import started since');
  t.match(
    decideCancelMailboxImport(given(create(A)), expired),
    [{ type: 'MailboxImportCancelled', data: { reason: 'Expired.' } }],
    'and cancels one still uploading, with its reason',
  );
});

t.test('formats from bytes, takeout labels, placement by options', async (t) => {
  t.equal(detectFormat(Buffer.from('From a@b Mon Jan  1 00:00:00 2024\n')), 'mbox');
  t.equal(detectFormat(Buffer.from('Return-Path: <a@b>\r\nFrom: a@b\r\n')), 'eml');
  t.equal(detectFormat(Buffer.from('PK\x03\x04')), 'zip');
  t.equal(detectFormat(Buffer.from('PK\x05\x06')), 'zip', 'an empty zip is a zip (the start finds no mail in it)');
  t.equal(detectFormat(Buffer.from([0x1f, 0x8b, 0x08, 0x00])), 'tgz');
  t.equal(detectFormat(Buffer.from('MZ\x90\x00')), 'dangerous');
  t.equal(detectFormat(Buffer.from('#!')), 'dangerous');
  t.equal(detectFormat(Buffer.from('hello world')), 'unsupported');
  t.equal(
    detectFormat(Buffer.from('BEGIN:VCALENDAR\r\nVERSION:2.0\r\n')),
    'unsupported',
    'name: value lines, no mail field',
  );
  t.equal(detectFormat(Buffer.from('X-Mailer: a\nSubject: hi\n\nbody')), 'eml');
  t.equal(unsafeEntryName('mail/all.mbox'), null);
  t.equal(unsafeEntryName('mail/..data/x.eml'), null, 'dots in a name are no traversal');
  for (const name of ['../x.eml', 'a/../../x', '/etc/passwd', 'C:/x', 'c:x', 'a\\..\\..\\x', 'a\0b'])
    t.ok(unsafeEntryName(name), name);
  t.ok(isExecutableName('Invoice.PDF.exe'));
  t.notOk(isExecutableName('All mail.mbox'));
  t.same(splitLabels('Inbox,Unread,"Clients, big",Work/Sub'), ['Inbox', 'Unread', 'Clients, big', 'Work/Sub']);
  const place = (labels: string | null, options = {}, fromSelf = false) =>
    placeMessage(
      { labels: labels === null ? null : splitLabels(labels), fromSelf, status: null },
      { ...OPTIONS, ...options },
    );
  t.match(place('Inbox,Unread,Work'), { skip: false, wanted: 'inbox', unread: true, custom: ['Work'] });
  t.match(place('Inbox,Opened', { keepInbox: false }), { wanted: 'archive', unread: false });
  t.match(place('Spam'), { skip: true, reason: 'spam' });
  t.match(place('Spam,Unread', { includeSpam: true }), { wanted: 'spam' });
  t.match(place('Trash'), { skip: true, reason: 'trash' });
  t.match(place('Sent,Opened'), { direction: 'sent', wanted: 'archive', unread: false });
  t.match(place('Draft'), { skip: false, draft: true });
  t.match(place('Draft,Unread,Work'), { skip: false, draft: true });
  t.match(place('Draft,Trash', { includeTrash: true }), { skip: true, reason: 'draft' }, 'a discarded draft');
  t.match(place('Chat,Inbox'), { skip: true, reason: 'chat' });
  t.match(place('Important,Starred,Category Social,Opened'), { wanted: 'archive', custom: [] });
  t.match(place(null), { direction: 'received', wanted: 'inbox', unread: true });
  t.match(place(null, {}, true), { direction: 'sent', wanted: 'archive' });
});

t.test('imported mail is quiet: no webhook mapper for it or for the imports', async (t) => {
  const { WEBHOOK_SOURCE_TYPES } = await import('../../domain/webhooks/catalogue.ts');
  const types = WEBHOOK_SOURCE_TYPES as readonly string[];
  t.notOk(types.includes('MessageImported'));
  t.notOk(types.some((type) => type.startsWith('MailboxImport')));
});
