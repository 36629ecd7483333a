import t from 'tap';
import { createContact, touchContact } from '../../commands/contacts/handlers.ts';
import { findContactByEmail, findContactById } from '../../projections/contacts/queries.ts';
import { startTestApp } from '../support/app.ts';

const NOW = () => new Date().toISOString();

t.test('createContact: the command other features call (contact events use it with source auto)', async (t) => {
  const h = await startTestApp(t);
  const { workspaceId } = await h.workspace();
  const other = await h.workspace();
  const actor = { workspaceId, kind: 'system' as const, id: null };
  const db = h.system.database.db;

  const first = await createContact(h.system.commands, actor, { email: '  Ada@Example.COM ', name: 'Ada', source: 'auto' }, NOW());
  t.equal(first.created, true);
  t.match(first.contactId, /^con_[0-9a-f]{24}$/);
  // Read-your-writes: the row is there when the command returns.
  t.match(await findContactByEmail(db, workspaceId, 'ada@example.com'), { id: first.contactId, workspace_id: workspaceId, email: 'ada@example.com', name: 'Ada', source: 'auto' });
  t.match(await findContactById(db, workspaceId, first.contactId), { email: 'ada@example.com' });
  t.equal(await findContactById(db, other.workspaceId, first.contactId), undefined, 'another workspace does not see it');
  t.equal(await findContactByEmail(db, other.workspaceId, 'ada@example.com'), undefined);

  const again = await createContact(h.system.commands, actor, { email: 'ada@example.com', name: 'Other', source: 'manual' }, NOW());
  t.same(again, { created: false, contactId: first.contactId }, 'an address in the book answers its id and writes nothing');
  t.equal((await findContactByEmail(db, workspaceId, 'ada@example.com'))!.name, 'Ada');

  const racers = await Promise.all(
    Array.from({ length: 8 }, (_, i) => createContact(h.system.commands, actor, { email: 'race@example.com', name: `r${i}`, source: 'auto' }, NOW())),
  );
  t.equal(racers.filter((r) => r.created).length, 1, 'of 8 concurrent creates exactly one writes');
  t.equal(new Set(racers.map((r) => r.contactId)).size, 1, 'all answer the one id');

  const seenAt = new Date(Date.now() - 1000).toISOString();
  await touchContact(h.system.commands, actor, 'ADA@example.com', seenAt);
  t.equal((await findContactByEmail(db, workspaceId, 'ada@example.com'))!.last_seen_at!.toISOString(), seenAt);
  await touchContact(h.system.commands, actor, 'ada@example.com', new Date(Date.now() - 60_000).toISOString());
  t.equal((await findContactByEmail(db, workspaceId, 'ada@example.com'))!.last_seen_at!.toISOString(), seenAt, 'never moves back');
  await touchContact(h.system.commands, actor, 'nobody@example.com', seenAt);
  t.equal(await findContactByEmail(db, workspaceId, 'nobody@example.com'), undefined, 'an address not in the book stays out');
});
