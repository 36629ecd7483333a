import type { ColumnType, Generated, GeneratedAlways } from 'kysely';
import type { Engine } from '../../domain/templates/events.ts';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

type NullableJson<T> = ColumnType<T | null, string | null, string | null>;

/** The tables of the templates read model (projector.ts). */
export interface TemplatesTables {
  templates: {
    id: string;
    workspace_id: string;
    registered: Generated<boolean>;
    name: Generated<string>;
    name_key: Generated<string>;
    slug: Generated<string>;
    description: string | null;
    archived: Generated<boolean>;
    published_version: number | null;
    latest_version: Generated<number>;
    subject: string | null;
    engine: Engine | null;
    slots: NullableJson<Record<string, unknown>[]>;
    props: NullableJson<Record<string, unknown>[]>;
    revision: Generated<number>;
    renames: Generated<number>;
    registry_position: Generated<number>;
    created_at: Timestamp;
    updated_at: Timestamp;
    search: GeneratedAlways<string>;
  };
  template_versions: {
    template_id: string;
    version: number;
    workspace_id: string;
    id: string;
    published: Generated<boolean>;
    engine: Engine;
    subject: string;
    document: NullableJson<Record<string, unknown>>;
    html: string | null;
    sanitised_html: string | null;
    slots: Json<Record<string, unknown>[]>;
    props: Json<Record<string, unknown>[]>;
    restored_from: number | null;
    created_at: Timestamp;
    published_at: NullableTimestamp;
  };
}
