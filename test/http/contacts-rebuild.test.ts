import t from 'tap';
import { touchContact } from '../../commands/contacts/handlers.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { startTestApp } from '../support/app.ts';

t.test(
  'a rebuilt contacts read model (contacts, audiences, membership history, audience sets) equals the live one',
  async (t) => {
    const h = await startTestApp(t);
    const ws = await h.workspace();
    const req = (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: object) =>
      h.request(ws.apiKey, method, path, body);
    const a = (await req('POST', '/audiences', { name: 'A' })).json().id;
    const b = (await req('POST', '/audiences', { name: 'B', description: 'gone soon' })).json().id;
    await req('POST', '/contacts', {
      email: 'one@example.com',
      name: 'One',
      attributes: { k: 'v' },
      audienceIds: [a, b],
    });
    await req('POST', '/contacts', { email: 'two@example.com', audienceIds: [b] });
    await req('PATCH', '/contacts/one@example.com', { attributes: { k: null, j: 'w' }, notes: 'n' });
    await req('DELETE', `/audiences/${a}/contacts/one@example.com`);
    await req('PUT', `/audiences/${a}/contacts/one@example.com`);
    await req('DELETE', '/contacts/two@example.com');
    await req('POST', '/contacts', { email: 'two@example.com' });
    await req('POST', '/contacts', { email: 'three@example.com', audienceIds: [a] });
    await req('DELETE', `/audiences/${b}`);
    await touchContact(
      h.system.commands,
      { workspaceId: ws.workspaceId, kind: 'system', id: null },
      'one@example.com',
      new Date().toISOString(),
    );

    const { db, pool } = h.system.database;
    const projector = h.system.runner.projectors.find((p) => p.name === 'contacts')!;
    const rows = async (schema: string) => ({
      contacts: (await pool.query(`SELECT * FROM ${schema}.contacts ORDER BY id`)).rows,
      audiences: (await pool.query(`SELECT * FROM ${schema}.audiences ORDER BY id`)).rows,
      tombstones: (await pool.query(`SELECT * FROM ${schema}.audience_tombstones ORDER BY id`)).rows,
      members: (
        await pool.query(`SELECT * FROM ${schema}.audience_members ORDER BY audience_id, contact_id, joined_at`)
      ).rows,
      hours: (await pool.query(`SELECT * FROM ${schema}.audience_member_hours ORDER BY audience_id, hour`)).rows,
      days: (await pool.query(`SELECT * FROM ${schema}.audience_member_days ORDER BY audience_id, day`)).rows,
      sets: (await pool.query(`SELECT * FROM ${schema}.contact_audience_sets ORDER BY contact_id`)).rows,
      setCounts: (await pool.query(`SELECT * FROM ${schema}.audience_set_counts ORDER BY workspace_id, audience_ids`))
        .rows,
    });
    const live = await rows('public');
    t.equal(live.contacts.length, 3);
    t.same(
      live.tombstones.map((r: any) => r.id),
      [b],
      'deleted B keeps its place for list cursors',
    );
    t.same(
      live.setCounts.map((r: any) => [r.audience_ids, r.contacts]),
      [[[a], 2]],
      'one and three are in A alone: deleting B merged the set {A, B} into {A}',
    );
    t.equal(
      live.members.filter((m: any) => m.audience_id === a).length,
      3,
      'one: a stay, a leave and a second stay; three: a stay',
    );
    await rebuildProjection(db, pool, h.system.store, h.system.runner, projector, {
      swap: false,
      schema: 'compare_contacts',
    });
    t.same(await rows('compare_contacts'), live);
    await pool.query('DROP SCHEMA compare_contacts CASCADE');
  },
);
