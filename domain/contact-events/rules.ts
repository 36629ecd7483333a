/**
 * The rules of one contact event (spec: Events > Contact events, Limits). Pure: `now` comes in.
 * A broken rule is `invalid_event` with the field as `param`; the shape (types, unknown fields)
 * is checked by the api's zod schema before this.
 */
import { z } from 'zod';

export const EVENT_NAME_MAX = 100;
export const EVENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
export const PROPERTIES_MAX_KEYS = 50;
/** Bytes of the properties serialised as JSON. */
export const PROPERTIES_MAX_BYTES = 4096;
export const RETENTION_DAYS = 90;
export const RETENTION_MS = RETENTION_DAYS * 24 * 60 * 60 * 1000;
/** occurredAt may be this far ahead of our clock (the caller's clock runs a little fast). */
export const FUTURE_SKEW_MS = 60_000;
export const EMAIL_MAX = 320;
export const CONTACT_ID_MAX = 64;
export const CONTACT_NAME_MAX = 200;
export const BATCH_MAX = 100;

export interface EventInput {
  name: string;
  email?: string;
  contactId?: string;
  properties?: Record<string, unknown>;
  occurredAt?: string;
  createContact?: boolean;
  contactName?: string;
}

export interface CheckedEvent {
  name: string;
  /** Trimmed and lower-cased. */
  email: string | null;
  contactId: string | null;
  properties: Record<string, unknown>;
  occurredAt: string;
  createContact: boolean;
  contactName: string | null;
  /** What the request said, canonically (sorted keys, occurredAt as given): compared on a retry under the same key. */
  canonical: string;
}

export interface Broken {
  code: 'invalid_event';
  message: string;
  param: string;
}

/** The check POST /contacts makes, so `createContact` cannot put an address in the book that it refuses. */
const EMAIL = z.email();
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;
const encoder = new TextEncoder();

const broken = (param: string, message: string): Broken => ({
  code: 'invalid_event',
  param,
  message: `\`${param}\`: ${message}`,
});

export function checkEvent(input: EventInput, now: Date): CheckedEvent | Broken {
  const { name } = input;
  if (name.length < 1 || name.length > EVENT_NAME_MAX)
    return broken('name', `must be 1 to ${EVENT_NAME_MAX} characters.`);
  if (!EVENT_NAME_PATTERN.test(name))
    return broken('name', 'letters, digits, dots, colons, dashes and underscores, starting with a letter or digit.');
  let email: string | null = null;
  if (input.email !== undefined) {
    email = input.email.trim().toLowerCase();
    if (email.length > EMAIL_MAX || !EMAIL.safeParse(email).success)
      return broken('email', `must be an email address of at most ${EMAIL_MAX} characters.`);
  }
  let contactId: string | null = null;
  if (input.contactId !== undefined) {
    contactId = input.contactId;
    if (contactId.length < 1 || contactId.length > CONTACT_ID_MAX)
      return broken('contactId', `must be 1 to ${CONTACT_ID_MAX} characters.`);
  }
  if (email === null && contactId === null) return broken('email', 'name the contact by `email` or `contactId`.');
  const properties = input.properties ?? {};
  if (Object.keys(properties).length > PROPERTIES_MAX_KEYS)
    return broken('properties', `at most ${PROPERTIES_MAX_KEYS} keys.`);
  if (encoder.encode(JSON.stringify(properties)).length > PROPERTIES_MAX_BYTES)
    return broken('properties', `at most ${PROPERTIES_MAX_BYTES} bytes as JSON.`);
  let occurredAt = now.toISOString();
  if (input.occurredAt !== undefined) {
    const at = ISO_INSTANT.test(input.occurredAt) ? Date.parse(input.occurredAt) : NaN;
    if (!Number.isFinite(at)) return broken('occurredAt', 'must be an ISO 8601 date-time with a zone.');
    if (at > now.getTime() + FUTURE_SKEW_MS) return broken('occurredAt', 'must not be in the future.');
    if (at < now.getTime() - RETENTION_MS)
      return broken('occurredAt', `must not be older than ${RETENTION_DAYS} days.`);
    occurredAt = new Date(at).toISOString();
  }
  const createContact = input.createContact ?? false;
  if (createContact && email === null) return broken('createContact', 'needs `email`.');
  const contactName = input.contactName ?? null;
  if (contactName !== null && contactName.length > CONTACT_NAME_MAX)
    return broken('contactName', `at most ${CONTACT_NAME_MAX} characters.`);
  const canonical = stableJson({
    name,
    email,
    contactId,
    properties,
    occurredAt: input.occurredAt ?? null,
    createContact,
    contactName,
  });
  return { name, email, contactId, properties, occurredAt, createContact, contactName, canonical };
}

export const isBroken = (r: CheckedEvent | Broken): r is Broken => 'code' in r;

/** JSON with object keys sorted at every depth, so `{a,b}` and `{b,a}` are the same event. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Automations never see a property named `email` (it is stored, but never reaches a step or filter). */
export function automationProperties(properties: Record<string, unknown>): Record<string, unknown> {
  const { email: _dropped, ...rest } = properties;
  return rest;
}
