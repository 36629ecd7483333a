import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideCreateSignature,
  decideDeleteSignature,
  decideSetLegacySignature,
  decideSetSignatureDefaults,
  decideUpdateSignature,
  SIGNATURES_MAX,
} from '../../domain/signatures/decide.ts';
import type { SignatureEvent } from '../../domain/signatures/events.ts';
import { signaturesAggregate, type SignaturesState } from '../../domain/signatures/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const OWNER = 'addr_1';
const given = (events: SignatureEvent[]): SignaturesState =>
  events.reduce(signaturesAggregate.evolve, signaturesAggregate.initialState);
const create = (
  state: SignaturesState,
  id: string,
  name: string,
  flags: { isDefault?: boolean; isReplyDefault?: boolean } = {},
) =>
  decideCreateSignature(state, {
    signatureId: id,
    owner: OWNER,
    address: 'a@example.com',
    name,
    html: '<p>x</p>',
    now: NOW,
    ...flags,
  });
const after = (state: SignaturesState, events: SignatureEvent[]) => events.reduce(signaturesAggregate.evolve, state);

t.test('defaults: the first takes both unless sent false; a later one only when asked', async (t) => {
  const first = create(given([]), 'sig_1', 'Work');
  t.match(first, [{ type: 'SignatureCreated', data: { isDefault: true, isReplyDefault: true } }]);
  let s = after(given([]), first);
  t.same([s.defaultId, s.replyDefaultId], ['sig_1', 'sig_1']);
  s = after(s, create(s, 'sig_2', 'Short'));
  t.same([s.defaultId, s.replyDefaultId], ['sig_1', 'sig_1'], 'a later one takes no place unasked');
  s = after(s, create(s, 'sig_3', 'Replies', { isReplyDefault: true }));
  t.same([s.defaultId, s.replyDefaultId], ['sig_1', 'sig_3'], 'asked: it takes the place from the holder');
  const notDefault = after(given([]), create(given([]), 'sig_1', 'Work', { isDefault: false }));
  t.same([notDefault.defaultId, notDefault.replyDefaultId], [null, 'sig_1'], 'the first, sent false for new mail');

  t.match(decideSetSignatureDefaults(s, { owner: OWNER, defaultId: 'sig_2', now: NOW }), [
    { type: 'SignatureDefaultsChanged', data: { defaultId: 'sig_2', replyDefaultId: 'sig_3' } },
  ]);
  t.same(decideSetSignatureDefaults(s, { owner: OWNER, defaultId: 'sig_1', now: NOW }), [], 'no change');
  t.match(decideSetSignatureDefaults(s, { owner: OWNER, replyDefaultId: null, now: NOW }), [
    { data: { defaultId: 'sig_1', replyDefaultId: null } },
  ]);
  t.match(
    refusal(() => decideSetSignatureDefaults(s, { owner: OWNER, defaultId: 'sig_x', now: NOW })),
    {
      code: 'resource_not_found',
      param: 'defaultId',
    },
  );

  const deleted = after(s, decideDeleteSignature(s, { signatureId: 'sig_1', owner: OWNER, now: NOW }));
  t.same([deleted.defaultId, deleted.replyDefaultId], [null, 'sig_3'], 'a deleted default leaves none');
  t.match(
    refusal(() => decideDeleteSignature(deleted, { signatureId: 'sig_1', owner: OWNER, now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
});

t.test('names unique ignoring case; fifty per address', async (t) => {
  const s = after(given([]), create(given([]), 'sig_1', 'Work'));
  t.match(
    refusal(() => create(s, 'sig_2', 'WORK')),
    { code: 'signature_name_taken', param: 'name' },
  );
  t.same(create(s, 'sig_1', 'Work'), [], 'the same id again: nothing');
  let full = given([]);
  for (let i = 0; i < SIGNATURES_MAX - 1; i++) full = after(full, create(full, `sig_${i}`, `n${i}`));
  t.equal(create(full, 'sig_last', 'last').length, 1, 'the fiftieth');
  full = after(full, create(full, 'sig_last', 'last'));
  t.match(
    refusal(() => create(full, 'sig_more', 'more')),
    { code: 'signature_limit_reached' },
  );
  t.match(
    refusal(() =>
      decideCreateSignature(full, {
        signatureId: 'sig_c',
        owner: OWNER,
        address: 'a@example.com',
        name: 'n1',
        html: 'x',
        now: NOW,
        param: 'addresses.3',
      }),
    ),
    { code: 'signature_name_taken', param: 'addresses.3' },
    'a copy names its target',
  );
});

t.test('update: name, html, flags; renames keep names unique', async (t) => {
  let s = given([]);
  s = after(s, create(s, 'sig_1', 'Work'));
  s = after(s, create(s, 'sig_2', 'Home'));
  const update = (cmd: object) => decideUpdateSignature(s, { signatureId: 'sig_2', owner: OWNER, now: NOW, ...cmd });
  t.match(update({ name: 'Personal' }), [{ type: 'SignatureUpdated', data: { name: 'Personal', html: '<p>x</p>' } }]);
  t.same(update({ name: 'Home', html: '<p>x</p>' }), [], 'no change');
  t.match(
    refusal(() => update({ name: 'work' })),
    { code: 'signature_name_taken', param: 'name' },
  );
  t.same(update({ name: 'HOME' }).length, 1, 'its own name in another case');
  t.match(update({ isDefault: true }), [
    { type: 'SignatureDefaultsChanged', data: { defaultId: 'sig_2', replyDefaultId: 'sig_1' } },
  ]);
  t.same(update({ isDefault: false }), [], 'false on a signature that does not hold it: nothing');
  t.match(decideUpdateSignature(s, { signatureId: 'sig_1', owner: OWNER, isReplyDefault: false, now: NOW }), [
    { data: { defaultId: 'sig_1', replyDefaultId: null } },
  ]);
  t.match(
    refusal(() => decideUpdateSignature(s, { signatureId: 'sig_x', owner: OWNER, now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
});

t.test('the legacy single signature: named Signature, default for both on an address without any', async (t) => {
  const legacy = (state: SignaturesState, html: string, id = 'sig_l') =>
    decideSetLegacySignature(state, { signatureId: id, owner: OWNER, address: 'a@example.com', html, now: NOW });
  const created = legacy(given([]), '<p>Jane</p>');
  t.match(created, [
    {
      type: 'SignatureCreated',
      data: { name: 'Signature', isDefault: true, isReplyDefault: true, html: '<p>Jane</p>' },
    },
  ]);
  const s = after(given([]), created);
  t.match(legacy(s, '<p>Jane D.</p>', 'sig_other'), [
    { type: 'SignatureUpdated', data: { signatureId: 'sig_l', html: '<p>Jane D.</p>' } },
  ]);
  const withDefault = after(given([]), create(given([]), 'sig_1', 'Work'));
  t.match(
    legacy(withDefault, '<p>new</p>'),
    [{ type: 'SignatureUpdated', data: { signatureId: 'sig_1' } }],
    'the default',
  );
  const noDefault = after(given([]), create(given([]), 'sig_1', 'Work', { isDefault: false }));
  t.match(legacy(noDefault, '<p>new</p>'), [
    { type: 'SignatureCreated', data: { name: 'Signature', isDefault: true, isReplyDefault: false } },
  ]);
});
