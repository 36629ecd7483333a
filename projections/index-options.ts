/**
 * DDL that sets a storage option on an index made before the option was, once: the ALTER locks
 * the index and writes the catalog, which a read model's ddl (run at every start) would otherwise
 * do each time. Nothing happens while the index does not exist yet (its CREATE carries the
 * option). For a projector's `ddl`, not its `indexes`, which a rebuild runs statement by statement.
 */
export const indexOptionOnce = (schema: string, index: string, option: string, value: string | number): string => `
    DO $do$ BEGIN
      IF EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass('${schema}.${index}')
          AND NOT coalesce(reloptions @> '{${option}=${value}}', false)) THEN
        ALTER INDEX ${schema}.${index} SET (${option} = ${value});
      END IF;
    END $do$;`;
