import pg from 'pg';
import t from 'tap';
import { openSystem } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

const limits = async (admin: pg.Client): Promise<Record<string, string[] | null>> => {
  const { rows } = await admin.query<{ relname: string; reloptions: string[] | null }>(
    `SELECT relname, reloptions FROM pg_class
     WHERE relname IN ('suppressions_email_search', 'suppressions_detail_search') ORDER BY relname`,
  );
  return Object.fromEntries(rows.map((r) => [r.relname, r.reloptions]));
};

t.test(
  "the suppressions trigram indexes keep a 256 kB pending list, set on a database's older indexes too",
  async (t) => {
    const url = await freshDatabase(t);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    t.teardown(() => admin.end());
    const open = async () =>
      (await openSystem(url, { secretsKey: TEST_SECRETS_KEY, deliver: false, poolSize: 4 })).close();

    await open();
    const set = {
      suppressions_detail_search: ['gin_pending_list_limit=256'],
      suppressions_email_search: ['gin_pending_list_limit=256'],
    };
    t.same(await limits(admin), set, 'made with the limit');

    // An index made before the limit: PostgreSQL's default, until the next start.
    await admin.query('ALTER INDEX suppressions_email_search RESET (gin_pending_list_limit)');
    await admin.query('ALTER INDEX suppressions_detail_search RESET (gin_pending_list_limit)');
    t.same(await limits(admin), { suppressions_detail_search: null, suppressions_email_search: null });
    await open();
    t.same(await limits(admin), set, 'set at the next start');
  },
);
