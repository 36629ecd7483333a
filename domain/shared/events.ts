import type { z } from 'zod';

/**
 * Every event type has a zod schema for its current version. An older stored shape is brought up
 * to date on read by the event's upcasters (one per version step), never rewritten in the store.
 */
export interface EventDefinition<T extends string = string, S extends z.ZodType = z.ZodType> {
  type: T;
  version: number;
  schema: S;
  /** upcasters[v] turns version v data into version v + 1 data. */
  upcasters: Record<number, (data: Record<string, unknown>) => Record<string, unknown>>;
}

export function defineEvent<T extends string, S extends z.ZodType>(
  type: T,
  schema: S,
  options: { version?: number; upcasters?: EventDefinition['upcasters'] } = {},
): EventDefinition<T, S> {
  return { type, schema, version: options.version ?? 1, upcasters: options.upcasters ?? {} };
}

/** The typed event a definition describes: `{type, data}`. */
export type EventOf<D> = D extends EventDefinition<infer T, infer S> ? { type: T; data: z.output<S> } : never;

export interface DomainEvent {
  type: string;
  data: Record<string, unknown>;
}

export class EventRegistry {
  private readonly byType = new Map<string, EventDefinition>();

  constructor(definitions: Iterable<EventDefinition>) {
    for (const d of definitions) {
      if (this.byType.has(d.type)) throw new Error(`event type ${d.type} defined twice`);
      this.byType.set(d.type, d);
    }
  }

  has(type: string): boolean {
    return this.byType.has(type);
  }

  /** Validates an event about to be stored; a bad payload is a programming error, not user input. */
  encode(event: DomainEvent): { type: string; version: number; data: Record<string, unknown> } {
    const def = this.definition(event.type);
    return { type: event.type, version: def.version, data: checked(def, event.data, 'to be stored') };
  }

  /** Upcasts stored data of any known version to the current shape and validates it. */
  decode(type: string, version: number, stored: Record<string, unknown>): DomainEvent {
    const def = this.definition(type);
    if (version > def.version) throw new Error(`event ${type} v${version} is newer than this code (v${def.version})`);
    let data = stored;
    for (let v = version; v < def.version; v++) {
      const up = def.upcasters[v];
      if (!up) throw new Error(`event ${type} has no upcaster from v${v}`);
      data = up(data);
    }
    return { type, data: checked(def, data, `stored as v${version}`) };
  }

  private definition(type: string): EventDefinition {
    const def = this.byType.get(type);
    if (!def) throw new Error(`unknown event type ${type}`);
    return def;
  }
}

/**
 * The data, parsed by the event's schema. A mismatch is a fault of the service (a decider's bug, a
 * log written by other code), so it is a plain Error: were it the ZodError, the API would answer
 * it as the caller's 422 naming a field of the event.
 */
function checked(def: EventDefinition, data: unknown, what: string): Record<string, unknown> {
  const parsed = def.schema.safeParse(data);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  throw new Error(`event ${def.type} ${what} does not match its schema: ${parsed.error.message}`, {
    cause: parsed.error,
  });
}
