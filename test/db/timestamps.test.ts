import t from 'tap';
import { openDatabase } from '../../infra/db.ts';
import { parseAnyForm as parsePostgresDate } from '../../infra/pg-timestamps.ts';
import { freshDatabase } from '../support/database.ts';

const INSTANTS = [
  '2026-11-28 12:26:00+00',
  '2026-11-28 12:26:00.1+00',
  '2026-11-28 12:26:00.12+00',
  '2026-11-28 12:26:00.123+00',
  '2026-11-28 12:26:00.1234+00',
  '2026-11-28 12:26:00.999999+00',
  '2026-01-01 00:00:00.000001+00',
  '2024-02-29 23:59:59.5+00',
  '1970-01-01 00:00:00+00',
  '1969-12-31 23:59:59.999+00',
  '0001-01-01 00:00:00+00',
  '0099-06-15 08:00:00+00',
  '0100-06-15 08:00:00.25+00',
  '9999-12-31 23:59:59.999999+00',
  '10000-01-01 00:00:00+00',
  '0044-03-15 12:00:00+00 BC',
];

t.test('timestamptz values read as pg-types reads them, in UTC and in another zone', async (t) => {
  const database = openDatabase(await freshDatabase(t), 1);
  t.teardown(() => database.close());
  for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns']) {
    await database.pool.query(`SET TimeZone = '${zone}'`);
    for (const instant of INSTANTS) {
      const { rows } = await database.pool.query<{ value: Date; text: string }>(
        'SELECT $1::timestamptz AS value, $1::timestamptz::text AS text',
        [instant],
      );
      const { value, text } = rows[0]!;
      const expected = parsePostgresDate(text) as Date;
      t.ok(value instanceof Date, `${zone} ${text}: a Date`);
      t.equal(value.getTime(), expected.getTime(), `${zone} ${text}: the same instant`);
      t.equal(value.toISOString(), expected.toISOString(), `${zone} ${text}: the same ISO text`);
      t.equal(JSON.stringify(value), JSON.stringify(expected), `${zone} ${text}: the same JSON`);
      // The hand parse takes UTC values of years 100 to 9999; the rest goes to pg's parser.
      const byHand = zone === 'UTC' && /^(0[1-9]|[1-9]\d)\d\d-/.test(text) && !text.endsWith(' BC');
      t.equal(value.constructor !== Date, byHand, `${zone} ${text}: ${byHand ? 'read by hand' : "pg's parse"}`);
    }
    for (const special of ['infinity', '-infinity']) {
      const { rows } = await database.pool.query<{ value: unknown }>(`SELECT '${special}'::timestamptz AS value`);
      t.equal(rows[0]!.value, parsePostgresDate(special), `${zone} ${special}`);
    }
  }
});

t.test('a date read from the database and then moved answers its new instant', async (t) => {
  const database = openDatabase(await freshDatabase(t), 1);
  t.teardown(() => database.close());
  const { rows } = await database.pool.query<{ value: Date }>(
    "SELECT '2026-11-28 12:26:00.123456+00'::timestamptz AS value",
  );
  const value = rows[0]!.value;
  t.not(value.constructor, Date, 'read by hand');
  t.equal(value.toISOString(), '2026-11-28T12:26:00.123Z');
  value.setUTCHours(1);
  t.equal(value.toISOString(), '2026-11-28T01:26:00.123Z');
  t.equal(JSON.stringify({ value }), '{"value":"2026-11-28T01:26:00.123Z"}');
});
